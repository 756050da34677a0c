"""Run summaries against the loopback judge: every stored statement cites cases of the run, a
statement citing an unknown case is dropped, a summary citing none is refused (its cost still
recorded, kind `summary`), and with no judge the refusal says why."""

import pytest
from django.utils.html import escape

from evaluations.actions.summarize_run import SummarizeRun, run_facts, summary_unavailable
from evaluations.choices import CostKind
from evaluations.judge.setup import NO_JUDGE
from evaluations.models import CostEntry
from governance.models import AuditEntry
from sherlock.core.errors import ActionConflict, ActionDenied
from tests.support import factories

JSON_SHAPE = {"label": "Json", "kind": "output_type", "params": {"type": "json"}, "threshold": 1.0}


@pytest.fixture
def finished(builder, django_capture_on_commit_callbacks):
    version = factories.agent_version()
    dataset_version = factories.dataset_version(
        cases=[("refund-1", "q1", {}), ("refund-2", "q2", {})], checks=[JSON_SHAPE]
    )
    capture = django_capture_on_commit_callbacks
    first = factories.start_run(builder, version, dataset_version, capture)
    second = factories.start_run(builder, version, dataset_version, capture)
    return first, second


def statement(kind, text, cases):
    return {"kind": kind, "text": text, "cases": cases}


def test_the_summary_keeps_statements_citing_existing_cases(
    judge_settings, llm_server, builder, finished
):
    _, run = finished
    facts, keys = run_facts(run)
    assert keys == {"refund-1", "refund-2"}
    assert facts["failures"][0]["cases"] == ["refund-1", "refund-2"]
    assert facts["previous_run"]["run"] == finished[0].pk
    llm_server.script(
        [
            {
                "statements": [
                    statement("failures", "Both are text, not JSON.", ["refund-1", "refund-2"]),
                    statement("worst", "refund-9 is the worst.", ["refund-9"]),
                    statement("change", "Nothing changed.", []),
                ]
            }
        ]
    )
    run = SummarizeRun(acting_user=builder, run=run).execute()
    summary = run.judge_summary
    assert [s["cases"] for s in summary["statements"]] == [["refund-1", "refund-2"]]
    assert [s["text"] for s in summary["dropped"]] == ["refund-9 is the worst.", "Nothing changed."]
    assert summary["previous_run"] == finished[0].pk
    assert "refund-1" in llm_server.requests[-1]["messages"][-1]["content"]
    assert CostEntry.objects.filter(kind=CostKind.SUMMARY, run=run).count() == 1
    assert AuditEntry.objects.filter(action="evaluations.run.summarize").count() == 1


def test_a_summary_citing_no_case_of_the_run_is_refused(
    judge_settings, llm_server, builder, finished
):
    _, run = finished
    llm_server.script([{"statements": [statement("worst", "made up", ["nope"])]}])
    with pytest.raises(ActionConflict, match="cited no case"):
        SummarizeRun(acting_user=builder, run=run).execute()
    run.refresh_from_db()
    assert run.judge_summary == {}
    assert CostEntry.objects.filter(kind=CostKind.SUMMARY, run=run).count() == 1  # still paid


def test_without_a_judge_it_says_why(settings, builder, finished):
    settings.SHERLOCK_JUDGE_BASE_URL = ""
    _, run = finished
    assert summary_unavailable(run) == NO_JUDGE  # the one sentence, not words of its own
    with pytest.raises(ActionConflict, match="No judge is configured"):
        SummarizeRun(acting_user=builder, run=run).execute()


def test_a_publisher_may_not(judge_settings, publisher, finished):
    with pytest.raises(ActionDenied):
        SummarizeRun(acting_user=publisher, run=finished[1]).execute()


def test_the_api_endpoint(judge_settings, llm_server, builder, finished):
    _, run = finished
    llm_server.script([{"statements": [statement("failures", "Not JSON.", ["refund-2"])]}])
    answer = factories.api(builder).post(f"/api/v1/runs/{run.pk}/summary/")
    assert answer.status_code == 200, answer.json()
    assert answer.json()["judge_summary"]["statements"][0]["cases"] == ["refund-2"]


def test_the_run_page_button(judge_settings, llm_server, logged_in, builder, finished):
    _, run = finished
    client = logged_in(builder)
    assert "Summarise with the judge" in client.get(f"/runs/{run.pk}/").content.decode()
    llm_server.script([{"statements": [statement("failures", "Not JSON.", ["refund-1"])]}])
    page = client.post(f"/runs/{run.pk}/summary/", follow=True).content.decode()
    assert page.count("Summary written.") == 1 and "Not JSON." in page  # said once, not twice
    assert f'href="/runs/{run.pk}/cases/refund-1/"' in page


def test_the_run_page_says_why_without_a_judge(settings, logged_in, builder, finished):
    settings.SHERLOCK_JUDGE_BASE_URL = ""
    page = logged_in(builder).get(f"/runs/{finished[1].pk}/").content.decode()
    assert 'id="summary-unavailable"' in page and escape(NO_JUDGE) in page
    assert "Judge settings" in page.split('id="summary-unavailable"')[1].split("</p>")[0]
