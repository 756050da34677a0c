"""A client run's page (docs/client.md): where it came from, escaped, and what it waits for."""

from agents.models import AgentVersion
from evaluations.actions.start_run import StartRun
from tests.support import factories

CASES = [("greet", "Hello", {})]
CHECKS = [{"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}]


def client_run(builder, source):
    agent = factories.agent("support-bot")
    version = AgentVersion.objects.create(agent=agent, number=1, adapter="client", config={})
    frozen = factories.dataset_version(factories.dataset("basics"), cases=CASES, checks=CHECKS)
    return StartRun(
        acting_user=builder, agent_version=version, dataset_version=frozen, source=source
    ).execute()


def test_the_run_page_shows_the_commit_branch_and_ci_job_link(builder, logged_in):
    run = client_run(
        builder,
        {
            "git_commit": "c0ffee1",
            "git_branch": "feature/<b>bold</b>",
            "ci_job_url": "https://ci.example/jobs/7?a=1&b=2",
            "git_repository": "javascript:alert(1)",
        },
    )
    page = logged_in(builder).get(f"/runs/{run.pk}/").content.decode()
    assert "c0ffee1" in page
    assert "feature/&lt;b&gt;bold&lt;/b&gt;" in page and "<b>bold</b>" not in page
    assert 'href="https://ci.example/jobs/7?a=1&amp;b=2"' in page
    assert 'href="javascript:' not in page and "javascript:alert(1)" in page
    assert "Waiting for the client" in page and "0 of 1 work items uploaded" in page


def test_a_run_without_source_shows_no_source_block(builder, logged_in):
    run = client_run(builder, {})
    page = logged_in(builder).get(f"/runs/{run.pk}/").content.decode()
    assert 'id="run-source"' not in page


def test_evaluate_refuses_a_client_version_whose_run_would_wait_for_ever(builder):
    import pytest
    from django.core.management import call_command
    from django.core.management.base import CommandError

    from evaluations.models import Run

    client_run(builder, {})
    before = Run.objects.count()
    with pytest.raises(CommandError, match="runs on the client"):
        call_command("evaluate", "support-bot", "--dataset", "basics", "--user", "builder")
    assert Run.objects.count() == before


def test_a_builder_cancels_a_waiting_client_run(builder, django_capture_on_commit_callbacks):
    from evaluations.actions.cancel_run import CancelRun
    from evaluations.choices import RunStatus, TrialStatus

    run = client_run(builder, {})
    with django_capture_on_commit_callbacks(execute=True):
        CancelRun(acting_user=builder, run=run).execute()
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and run.finalized_at is not None
    assert set(run.trials.values_list("status", flat=True)) == {TrialStatus.CANCELLED}
