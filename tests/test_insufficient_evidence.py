"""A policy that decides its case pass rate on the interval: 27 of 30 cases clear 0.85 by point
estimate but not by the Wilson interval, so the verdict is "insufficient evidence" (exit 2),
with how many cases would most likely decide it, on every surface: the verdict API, the run
page, `manage.py evaluate`, JUnit and the publish decision; the same runs under a point
policy pass, and a clear result still passes or fails on the interval."""

import json
from io import StringIO
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.db import IntegrityError
from statsmodels.stats.proportion import proportion_confint

from evaluations.contract import DEFAULT_THRESHOLDS
from evaluations.contract.applied import AppliedThresholds
from evaluations.models import Run
from evaluations.stats import wilson
from evaluations.verdict.gates import case_pass_rate_gate
from governance.actions.create_policy import CreatePolicy
from governance.actions.publish_version import PublishVersion
from governance.actions.request_bypass import RequestBypass
from governance.actions.request_publication import RequestPublication
from governance.models import GateDataset, PublishingPolicy
from sherlock.core.errors import ActionInvalid
from tests.support import factories
from tests.support.governance import api_client

HERE = "tests.test_insufficient_evidence"
JSON = {"label": "JSON", "kind": "output_type", "params": {"type": "json"}, "threshold": 1.0}


def answers(case, **_):
    """A JSON answer, billed, except for the cases whose input says not."""
    good = case["input"].get("good", True)
    return {"output": json.dumps({"ok": 1}) if good else "not json", "cost_usd": 0.01}


def run_command(name, *args):
    out = StringIO()
    try:
        call_command(name, *args, stdout=out)
    except SystemExit as exit_:
        return exit_.code, out.getvalue()
    return 0, out.getvalue()


def evaluate(*args):
    return run_command("evaluate", *args)


def world(admin_user, cases, failing, decides_on="interval", minimum=0.85):
    agent = factories.agent("rates-bot")
    factories.agent_version(agent, callable_path=f"{HERE}.answers")
    dataset_version = factories.dataset_version(
        factories.dataset("rates"),
        cases=[(f"c{n}", {"good": n >= failing}, {}) for n in range(cases)],
        checks=[JSON],
    )
    policy = PublishingPolicy.objects.create(
        name="Rates",
        agent=agent,
        version=1,
        min_case_pass_rate=minimum,
        case_pass_rate_decides_on=decides_on,
        min_useful_progress=None,
        min_tool_effect_integrity=None,
        created_by=admin_user,
    )
    policy.gate_datasets.add(dataset_version.dataset)
    GateDataset.objects.create(agent=agent, dataset=dataset_version.dataset)
    return agent, dataset_version


def test_27_of_30_clears_by_point_but_not_by_interval_on_every_surface(
    live_db, admin_user, builder, client, django_capture_on_commit_callbacks
):
    agent, dataset_version = world(admin_user, cases=30, failing=3)
    code, out = evaluate(agent.slug, "--dataset", "rates", "--user", "builder")
    run = Run.objects.latest("pk")
    assert run.summary["passed"] == 27, run.summary
    interval = wilson(27, 30)
    assert interval.low < 0.85 < interval.high  # the premise: 0.900 by point, 0.744-0.965

    # `manage.py evaluate`: exit 2, the fourth word, what would decide it.
    assert code == 2, out
    assert "result: insufficient evidence: ~333 more cases would most likely decide it" in out
    assert "insufficient evidence (case pass rate)" in out  # the contract table's gate cell

    # The verdict API: the outcome, the gate's state, its interval and the cases to decide.
    body = api_client(builder).get(f"/api/v1/runs/{run.pk}/verdict/").json()
    assert (body["outcome"], body["exit_code"]) == ("insufficient", 2)
    gate = next(g for g in body["gates"] if g["name"] == "case_pass_rate")
    assert gate["state"] == "insufficient"
    (row,) = gate["value"]["runs"]
    assert row["interval"] == [round(interval.low, 6), round(interval.high, 6)]
    assert (row["passed"], row["cases"], row["decision"]) == (27, 30, "insufficient")
    assert row["more_cases_to_decide"] == 333
    assert gate["bound"] == {"min": 0.85, "decides_on": "interval", "confidence": 0.95}
    (reason,) = body["reasons"]
    assert reason["docs"].endswith("/docs/contract/#deciding-on-the-interval")

    # JUnit: the verdict test case fails, typed and worded.
    junit = api_client(builder).get(f"/api/v1/runs/{run.pk}/junit/").content.decode()
    assert 'type="insufficient"' in junit and 'message="insufficient evidence: ' in junit

    # The run page and the run list.
    client.force_login(builder)
    html = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'data-outcome="insufficient" data-exit-code="2"' in html
    assert "<b>INSUFFICIENT EVIDENCE</b>" in html and 'id="interval-meaning"' in html
    assert "INSUFFICIENT EVIDENCE" in client.get("/runs/").content.decode()

    # The publish decision: blocked, as insufficient (not failed), and the page says so.
    version = agent.versions.get()
    with django_capture_on_commit_callbacks(execute=True):
        request = RequestPublication(acting_user=builder, agent_version=version).execute()
    request.refresh_from_db()
    assert request.state == "blocked"
    assert request.decision["verdict"]["outcome"] == "insufficient"
    assert request.decision["policy"]["case_pass_rate_decides_on"] == "interval"
    html = client.get(f"/governance/versions/{version.pk}/").content.decode()
    assert 'data-outcome="insufficient"' in html and "insufficient evidence" in html
    assert "has insufficient evidence at case pass rate" in html

    # `manage.py gate` reads the same decision: exit 2, in its words.
    code, out = run_command("gate", agent.slug, "--version", "1", "--wait", "0")
    assert code == 2, out
    assert "release: insufficient evidence at case pass rate" in out

    # An Admin may bypass it with a reason, as a failed gate; a Publisher then publishes.
    RequestBypass(
        acting_user=admin_user,
        publish_request=request,
        reason="Thirty cases is what we have this week; the other 3 are known returns gaps.",
    ).execute()
    publisher = factories.user("pub-x", role="Publisher")
    PublishVersion(acting_user=publisher, agent_version=version, reason="bypassed").execute()
    version.refresh_from_db()
    assert version.state == "published"


def test_the_same_run_passes_under_a_policy_that_decides_on_the_point(live_db, admin_user, builder):
    agent, _ = world(admin_user, cases=30, failing=3, decides_on="point")
    code, out = evaluate(agent.slug, "--dataset", "rates", "--user", "builder")
    assert code == 0, out


@pytest.mark.parametrize(
    ("passed", "cases", "state"),
    [
        (270, 300, "pass"),
        (27, 30, "insufficient"),
        (20, 30, "fail"),
        (30, 30, "pass"),
        (26, 30, "insufficient"),
    ],
)
def test_the_gate_passes_fails_or_is_undecided_as_the_interval_says(passed, cases, state):
    run = SimpleNamespace(
        pk=1,
        summary={"cases": cases, "passed": passed, "unscored": 0, "case_pass_rate": passed / cases},
    )
    applied = AppliedThresholds(DEFAULT_THRESHOLDS, case_pass_rate_decides_on="interval")
    gate = case_pass_rate_gate([run], 0.85, applied)
    assert gate.state == state, gate.detail
    # As the reference computes it: statsmodels' Wilson interval on the same counts.
    low, high = proportion_confint(passed, cases, alpha=0.05, method="wilson")
    assert gate.value["runs"][0]["interval"] == pytest.approx([low, high], abs=1e-6)
    assert (state == "insufficient") == (gate.value["runs"][0]["more_cases_to_decide"] is not None)


def test_one_run_failing_fails_the_gate_and_the_point_policy_reads_the_rate():
    runs = [
        SimpleNamespace(pk=n, summary={"cases": c, "passed": k, "unscored": 0,
                                        "case_pass_rate": k / c})
        for n, (k, c) in enumerate([(27, 30), (10, 30)], start=1)
    ]  # fmt: skip
    interval = AppliedThresholds(DEFAULT_THRESHOLDS, case_pass_rate_decides_on="interval")
    assert case_pass_rate_gate(runs, 0.85, interval).state == "fail"
    assert case_pass_rate_gate(runs[:1], 0.85, interval).state == "insufficient"
    assert (
        case_pass_rate_gate(runs[:1], 0.85, AppliedThresholds(DEFAULT_THRESHOLDS)).state == "pass"
    )


@pytest.mark.parametrize("minimum", [1.0, 0.0])
@pytest.mark.django_db
def test_a_policy_deciding_on_the_interval_needs_a_minimum_inside_0_and_1(admin_user, minimum):
    with pytest.raises(ActionInvalid) as refused:
        CreatePolicy(
            acting_user=admin_user,
            name="Never decided",
            min_case_pass_rate=minimum,
            case_pass_rate_decides_on="interval",
        ).execute()
    assert refused.value.field == "case_pass_rate_decides_on"
    assert not PublishingPolicy.objects.exists()
    with pytest.raises(IntegrityError):  # and the database refuses it from any other writer
        PublishingPolicy.objects.create(
            name="x", min_case_pass_rate=minimum, case_pass_rate_decides_on="interval"
        )
