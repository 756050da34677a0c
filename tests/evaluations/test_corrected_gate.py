"""A policy that gates a model check on its pass rate corrected for the judge's error: the
judge passes every answer, people fail half of a random sample of the run's results, and the
gate reads PPI++'s corrected rate (the same figure `ppi_rate` gives on the same labels) on its
interval: insufficient evidence with too few sample labels (and the labelling queue's sample
of that run to fix it), failed once the sample says the judge is lenient; labels chosen by the
ranked queue never count. The policy refuses a minimum outside (0, 1), naming the field; the
queue's sample of one run draws only that run's results."""

import pytest

from evaluations.actions.label_check_result import LabelCheckResult
from evaluations.choices import LabelSource
from evaluations.models import CheckResult
from evaluations.stats import ppi_rate
from evaluations.verdict import run_verdict
from governance.actions.create_policy import CreatePolicy
from governance.models import PublishingPolicy
from sherlock.core.errors import ActionInvalid
from tests.support import factories
from tests.support.governance import api_client
from tests.support.llm_server import Reply

HERE = "tests.evaluations.test_corrected_gate"
POLITE = {
    "label": "Polite",
    "kind": "custom",
    "threshold": 0.5,
    "params": {"criterion": "The answer is polite.", "anchors": "0 = rude, 1 = polite"},
}


def answers(case, **_):
    return {"output": f"Thank you kindly. (case {case['input']['n']})", "cost_usd": 0.01}


def lenient(request):
    return Reply(content={"quotes": ["Thank you kindly."], "reason": "Polite.", "score": 1})


@pytest.fixture
def gated_run(judge_settings, llm_server, admin_user, builder, django_capture_on_commit_callbacks):
    judge_settings.SHERLOCK_JUDGE_FREE = True  # the judge's calls cost nothing: none unpriced
    llm_server.responder = lenient
    agent = factories.agent("polite-bot")
    version = factories.agent_version(agent, callable_path=f"{HERE}.answers")
    dataset_version = factories.dataset_version(
        factories.dataset("polite"),
        cases=[(f"c{n:02d}", {"n": n}, {}) for n in range(40)],
        checks=[POLITE],
    )
    PublishingPolicy.objects.create(
        name="Corrected",
        agent=agent,
        min_case_pass_rate=0.5,
        corrected_checks={"Polite": 0.8, "Absent": 0.5},
        min_useful_progress=None,
        min_tool_effect_integrity=None,
        created_by=admin_user,
    )
    return factories.start_run(
        builder, version, dataset_version, django_capture_on_commit_callbacks
    )


def gate(run):
    verdict = run_verdict(run)
    return verdict, next(g for g in verdict.gates if g.name == "corrected_rates")


def label(editor, results, passed, source=LabelSource.SAMPLE):
    for result in results:
        LabelCheckResult(
            acting_user=editor, check_result=result, passed=passed, source=source
        ).execute()


def test_a_lenient_judge_is_corrected_by_the_runs_sample_labels(gated_run, editor):
    results = list(CheckResult.objects.filter(trial__run=gated_run).order_by("pk"))
    assert {r.status for r in results} == {"passed"}  # the judge passes every answer
    verdict, found = gate(gated_run)
    assert found.state == "insufficient" and verdict.outcome == "insufficient"
    (row,) = found.value["checks"]  # "Absent" is no check of this run: not read
    assert (row["check"], row["sample_labels"], row["rate"]) == ("Polite", 0, None)
    reason = next(r for r in verdict.reasons if r.code == "corrected_rates")
    assert f"/labels/?mode=sample&run={gated_run.pk}" in reason.fix
    assert reason.docs.endswith("/docs/checks/#gating-on-the-corrected-rate")

    # Labels from the ranked queue do not count, however many.
    label(editor, results[:12], False, source=LabelSource.QUEUE)
    assert gate(gated_run)[1].value["checks"][0]["sample_labels"] == 0

    # A random sample: people fail half of what the judge passed.
    sample = results[12:32]
    label(editor, sample[:10], False)
    label(editor, sample[10:], True)
    verdict, found = gate(gated_run)
    (row,) = found.value["checks"]
    expected = ppi_rate([False] * 10 + [True] * 10, [True] * 20, [True] * 20)
    assert row["rate"] == pytest.approx(expected.rate, abs=1e-6)
    assert row["interval"] == pytest.approx([expected.low, expected.high], abs=1e-6)
    assert (row["judge_rate"], row["labels_rate"], row["sample_labels"]) == (1.0, 0.5, 20)
    assert found.state == "fail" and verdict.outcome == "failed"
    assert "corrected 0.500 (judge alone 1.000" in found.detail
    assert verdict.first_failing_gate == "corrected_rates"


def test_a_minimum_outside_the_unit_interval_is_refused_naming_the_field(db, admin_user):
    for bad in ({"Polite": 1.5}, {"Polite": 0}, {"Polite": "high"}, ["Polite"], {"": 0.5}):
        with pytest.raises(ActionInvalid) as refused:
            CreatePolicy(acting_user=admin_user, name="Bad", corrected_checks=bad).execute()
        assert refused.value.field == "corrected_checks", bad
    body = {"name": "Bad", "corrected_checks": {"Polite": 2}}
    response = api_client(admin_user).post("/api/v1/policies/", body, format="json")
    assert response.status_code == 400 and response.json()["field"] == "corrected_checks"
    assert not PublishingPolicy.objects.filter(name="Bad").exists()


def test_the_queues_sample_of_one_run_draws_only_its_results(gated_run, editor, client, builder):
    other = factories.start_run(
        builder, gated_run.agent_version, gated_run.dataset_version, lambda **_: _Nothing()
    )
    client.force_login(editor)
    for _ in range(5):
        page = client.get(f"/labels/?mode=sample&run={gated_run.pk}").content.decode()
        result = page.split('name="result" value="')[1].split('"')[0]
        assert CheckResult.objects.get(pk=result).trial.run_id == gated_run.pk
        assert f'name="run" value="{gated_run.pk}"' in page
    assert client.get("/labels/?mode=sample&run=abc").status_code == 404
    assert client.get(f"/labels/?mode=sample&run={other.pk + 99}").status_code == 404
    client.post(
        "/labels/", {"mode": "sample", "run": gated_run.pk, "result": result, "verdict": "fail"}
    )
    labelled = CheckResult.objects.get(pk=result).human_labels.get()
    assert labelled.source == LabelSource.SAMPLE


class _Nothing:
    """A capture that runs nothing: the second run stays queued, without results."""

    def __enter__(self):
        return []

    def __exit__(self, *exc):
        return False


def test_the_run_page_reports_each_model_checks_corrected_rate(gated_run, editor, client):
    client.force_login(editor)
    html = client.get(f"/runs/{gated_run.pk}/").content.decode()
    assert 'id="corrected-rates"' in html and "40 judged" in html
    assert f'href="/labels/?mode=sample&amp;run={gated_run.pk}"' in html
    results = list(CheckResult.objects.filter(trial__run=gated_run).order_by("pk"))
    label(editor, results[:8], False)
    label(editor, results[8:16], True)
    html = client.get(f"/runs/{gated_run.pk}/").content.decode()
    expected = ppi_rate([False] * 8 + [True] * 8, [True] * 16, [True] * 24)
    row = html.split('data-check="Polite"')[1].split("</tr>")[0]
    assert (
        f"<b>{expected.rate:.3f}</b>" in row and f"{expected.low:.3f} – {expected.high:.3f}" in row
    )
    assert "1.000" in row and ">16<" in row and "0.500" in row
