"""The trial's admin page shows the adapter's transcript warnings (a cut-off answer, a server
that cannot pass tools) above the transcript, and says "none" when there are none."""

from django.urls import reverse

from evaluations.models import Run, Trial
from tests.support import factories

CUT_OFF = "answer 1 was cut off at the token limit (finish_reason length, max_tokens 5)"


def trial_with(transcript):
    version = factories.agent_version()
    dataset_version = factories.dataset_version(cases=[("greeting", "hello", {})])
    run = Run.objects.create(agent_version=version, dataset_version=dataset_version)
    case_version = dataset_version.case_versions.get()
    return Trial.objects.create(
        run=run,
        case=case_version.case,
        case_version=case_version,
        repetition=1,
        status="completed",
        transcript=transcript,
    )


def test_the_trial_page_shows_the_transcripts_warnings(admin_client):
    trial = trial_with({"output": "Refunds take three busi", "warnings": [CUT_OFF, "<b>x</b>"]})
    page = admin_client.get(reverse("admin:evaluations_trial_change", args=[trial.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    assert CUT_OFF in html
    assert "&lt;b&gt;x&lt;/b&gt;" in html  # a warning is text, never markup
    assert html.index("Warnings") < html.index("Transcript")


def test_the_trial_page_says_none_without_warnings(admin_client):
    trial = trial_with({"output": "hello"})
    page = admin_client.get(reverse("admin:evaluations_trial_change", args=[trial.pk]))
    assert page.status_code == 200
    assert "Warnings" in page.content.decode()
