"""A run that stops early: its cases in an order drawn from a seed stored on the run, its gates
read case by case in that order, and the run stopped (its pending trials cancelled) once a gate
fails or every gate is decided; the verdict reads the finished run by the same rule."""

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command

from agents.choices import Adapter
from evaluations.actions.start_run import SEED_LIMIT, StartRun
from evaluations.choices import TrialStatus
from evaluations.models import Run, Trial
from evaluations.verdict import run_verdict
from evaluations.verdict.sequential import Step, decide_pairs, decide_rate, seeded_order
from governance.actions.request_publication import RequestPublication
from governance.models import AuditEntry, GateDataset, PublishingPolicy
from sherlock.core.errors import ActionInvalid
from tests.support import factories
from tests.support.governance import api_client

HERE = "tests.evaluations.test_stop_early"
JSON = {"label": "JSON", "kind": "output_type", "params": {"type": "json"}, "threshold": 1.0}


def answers(case, broken=(), every=0, **_):
    """JSON (passing) unless the case's number is in `broken` or a multiple of `every`."""
    n = case["input"]["n"]
    good = n not in broken and not (every and n % every == 0)
    return {"output": json.dumps({"ok": 1}) if good else "not json", "cost_usd": 0.01}


def world(admin_user, cases, decides_on="interval", minimum=0.9, margin=None, **behaviour):
    agent = factories.agent("early-bot")
    version = factories.agent_version(agent, callable_path=f"{HERE}.answers", kwargs=behaviour)
    dataset_version = factories.dataset_version(
        factories.dataset("early"),
        cases=[(f"c{n:03d}", {"n": n}, {}) for n in range(cases)],
        checks=[JSON],
    )
    if decides_on is not None:
        PublishingPolicy.objects.create(
            name="Early",
            agent=agent,
            min_case_pass_rate=minimum,
            case_pass_rate_decides_on=decides_on,
            max_regression=margin,
            min_useful_progress=None,
            min_tool_effect_integrity=None,
            created_by=admin_user,
        )
    return agent, version, dataset_version


def run_of(builder, version, dataset_version, capture, **options):
    return factories.start_run(
        builder, version, dataset_version, capture, stop_early=True, **options
    )


def gate(verdict, name="case_pass_rate"):
    return next(g for g in verdict.gates if g.name == name)


def test_the_seed_orders_the_cases_and_the_trials(db, admin_user, builder):
    _, version, dataset_version = world(admin_user, cases=30)
    ids = list(dataset_version.case_versions.values_list("case_id", flat=True))
    assert seeded_order(ids, 7) == seeded_order(reversed(ids), 7)  # the seed alone decides
    assert sorted(seeded_order(ids, 7)) == sorted(ids) and seeded_order(ids, 7) != sorted(ids)
    assert seeded_order(ids, 7) != seeded_order(ids, 8)
    run = StartRun(
        acting_user=builder,
        agent_version=version,
        dataset_version=dataset_version,
        repetitions=2,
        stop_early=True,
        seed=7,
    ).execute()
    assert (run.stop_early, run.seed) == (True, 7)
    trials = list(Trial.objects.filter(run=run).order_by("pk").values_list("case_id", flat=True))
    assert trials[::2] == seeded_order(ids, 7) and trials[1::2] == seeded_order(ids, 7)
    entry = AuditEntry.objects.get(action="evaluations.run.start")
    assert (entry.after["stop_early"], entry.after["seed"]) == (True, 7)
    drawn = StartRun(
        acting_user=builder, agent_version=version, dataset_version=dataset_version, stop_early=True
    ).execute()
    assert 0 <= drawn.seed < SEED_LIMIT  # none given: one drawn and kept


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"seed": 3}, "seed"),  # a seed without stopping early orders nothing
        ({"stop_early": True, "seed": -1}, "seed"),
        ({"stop_early": True, "seed": SEED_LIMIT}, "seed"),
        ({"stop_early": True, "seed": "7"}, "seed"),
    ],
)
def test_a_bad_seed_is_refused_naming_it(db, admin_user, builder, options, field):
    _, version, dataset_version = world(admin_user, cases=3)
    with pytest.raises(ActionInvalid) as refused:
        StartRun(
            acting_user=builder, agent_version=version, dataset_version=dataset_version, **options
        ).execute()
    assert refused.value.field == field


def test_a_client_version_cannot_stop_early(db, admin_user, builder):
    _, version, dataset_version = world(admin_user, cases=3)
    version.adapter = Adapter.CLIENT
    version.save()
    with pytest.raises(ActionInvalid) as refused:
        StartRun(
            acting_user=builder,
            agent_version=version,
            dataset_version=dataset_version,
            stop_early=True,
        ).execute()
    assert refused.value.field == "stop_early"


def test_a_clear_loss_stops_early_and_fails(
    db, admin_user, builder, django_capture_on_commit_callbacks
):
    # Half the cases fail against a 0.9 floor decided on the interval.
    _, version, dataset_version = world(admin_user, cases=200, every=2)
    run = run_of(builder, version, dataset_version, django_capture_on_commit_callbacks, seed=1)
    assert run.status == "completed"
    cancelled = Trial.objects.filter(run=run, status=TrialStatus.CANCELLED).count()
    ran = run.trials_total - cancelled
    assert 0 < ran < 60, ran  # the loss is clear after a few dozen cases, not 200
    record = run.sequential
    assert record["trials_not_run"] == cancelled
    assert record["gates"]["case_pass_rate"]["decision"] == "fail"
    after = record["gates"]["case_pass_rate"]["after_cases"]
    assert after <= ran
    verdict = run_verdict(run)
    assert verdict.outcome == "failed"
    found = gate(verdict)
    assert found.state == "fail"
    (row,) = found.value["runs"]
    assert (row["after_cases"], row["seed"], row["decision"]) == (after, 1, "fail")
    assert f"decided after {after} of 200 cases in seed order" in found.detail
    entry = AuditEntry.objects.get(action="evaluations.run.stop_early")
    assert entry.actor is None and entry.after["trials_not_run"] == cancelled
    assert entry.reason == "a gate failed"


def test_a_clear_win_stops_early_and_passes(
    db, admin_user, builder, django_capture_on_commit_callbacks
):
    _, version, dataset_version = world(admin_user, cases=150, minimum=0.5)
    run = run_of(builder, version, dataset_version, django_capture_on_commit_callbacks)
    ran = run.trials_total - Trial.objects.filter(run=run, status="cancelled").count()
    assert ran < 30, ran
    assert run.sequential["gates"]["case_pass_rate"]["decision"] == "pass"
    verdict = run_verdict(run)
    assert (verdict.outcome, gate(verdict).state) == ("passed", "pass"), verdict.reasons
    assert AuditEntry.objects.get(action="evaluations.run.stop_early").reason == (
        "every gate was decided"
    )


def test_a_close_call_runs_every_case_and_stays_undecided(
    db, admin_user, builder, django_capture_on_commit_callbacks
):
    # 90 % pass against a 0.9 floor: no number of cases decides it.
    _, version, dataset_version = world(admin_user, cases=60, every=10)
    run = run_of(builder, version, dataset_version, django_capture_on_commit_callbacks)
    assert run.sequential == {}
    assert not Trial.objects.filter(run=run, status="cancelled").exists()
    verdict = run_verdict(run)
    assert (verdict.outcome, gate(verdict).state) == ("insufficient", "insufficient")
    assert "undecided after 60 of 60 cases in seed order" in gate(verdict).detail


def test_on_the_point_estimate_a_run_stops_once_its_rate_is_certain(
    db, admin_user, builder, django_capture_on_commit_callbacks
):
    # No policy: every case must pass, so the first failure decides; it is the fourth case.
    _, version, dataset_version = world(admin_user, cases=40, decides_on=None)
    order = seeded_order(dataset_version.case_versions.values_list("case_id", flat=True), 5)
    keys = dict(dataset_version.case_versions.values_list("case_id", "input"))
    version.config["kwargs"] = {"broken": [keys[order[3]]["n"]]}
    version.save()
    run = run_of(builder, version, dataset_version, django_capture_on_commit_callbacks, seed=5)
    assert run.sequential["gates"]["case_pass_rate"] == {
        "decision": "fail",
        "after_cases": 4,
        "cases": 40,
        "with_verdict": 4,
    }
    assert Trial.objects.filter(run=run, status="cancelled").count() == 36
    verdict = run_verdict(run)
    assert verdict.outcome == "failed" and "certain whatever the cases left do" in (
        gate(verdict).detail
    )


def test_the_rule_in_seed_order_against_hand_counted_sequences():
    def steps(*statuses):
        return [Step(n, f"c{n}", status) for n, status in enumerate(statuses)]

    passed, failed = "passed", "failed"
    # Certain on the point estimate: 3 of 4 must pass; the second failure decides.
    found = decide_rate(steps(passed, failed, "unscored", failed, None), 0.75, "point", 0.95)
    assert (found.decision, found.at, found.judged) == ("fail", 4, 3)
    # A case not finished ends what is read: the fifth is never seen.
    found = decide_rate(steps(passed, passed, None, failed, failed), 0.5, "point", 0.95)
    assert (found.decision, found.seen, found.at) == ("insufficient", 2, None)
    # Paired: a flaky candidate case is a failed one; a case live has no verdict on is skipped.
    live = {"c0": True, "c1": True, "c2": False}
    found = decide_pairs(steps(passed, "flaky", passed, failed), live, 0.05, 0.95)
    assert (found.judged, found.passed, found.decision) == (3, 0, "insufficient")


def test_a_regression_against_live_stops_the_run_early(
    db, admin_user, builder, django_capture_on_commit_callbacks
):
    agent, live, dataset_version = world(admin_user, cases=120, minimum=0.3, margin=0.05)
    full = factories.start_run(builder, live, dataset_version, django_capture_on_commit_callbacks)
    agent.live_version = live
    agent.save()
    candidate = factories.agent_version(agent, callable_path=f"{HERE}.answers", kwargs={"every": 3})
    run = run_of(builder, candidate, dataset_version, django_capture_on_commit_callbacks)
    gates = run.sequential["gates"]
    assert gates["regression"]["decision"] == "fail", gates
    verdict = run_verdict(run)
    regression = gate(verdict, "regression")
    assert regression.state == "fail"
    assert regression.value["in_seed_order"][0]["live_run"] == full.pk
    assert regression.value["discordant"][0]["candidate_passed"] is False


@pytest.mark.e2e
def test_on_the_workers_loop_the_shards_behind_a_decided_run_do_not_run(
    live_db, admin_user, builder, settings, django_capture_on_commit_callbacks
):
    settings.SHERLOCK_SHARD_SIZE = 20
    _, version, dataset_version = world(admin_user, cases=200, every=2)
    run = run_of(builder, version, dataset_version, django_capture_on_commit_callbacks)
    assert run.status == "completed"
    cancelled = Trial.objects.filter(run=run, status="cancelled").count()
    assert cancelled >= 100, cancelled  # a shard's end reads the gates: the rest never ran
    assert run_verdict(run).outcome == "failed"


def test_the_api_starts_a_run_that_stops_early_and_shows_what_stopped_it(
    db, admin_user, builder, django_capture_on_commit_callbacks
):
    _, version, dataset_version = world(admin_user, cases=120, every=2)
    body = {"agent_version": version.pk, "dataset_version": dataset_version.pk}
    api = api_client(builder)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/v1/runs/", {**body, "stop_early": True, "seed": 11}, "json")
    assert response.status_code == 201, response.json()
    shown = api.get(f"/api/v1/runs/{response.json()['id']}/").json()
    assert (shown["stop_early"], shown["seed"]) == (True, 11)
    assert shown["sequential"]["gates"]["case_pass_rate"]["decision"] == "fail"
    assert shown["summary"]["trials_cancelled"] == shown["sequential"]["trials_not_run"] > 0
    for bad in (
        {"seed": 11},
        {"stop_early": True, "seed": -1},
        {"stop_early": True, "seed": 2**63},
    ):
        refused = api.post("/api/v1/runs/", {**body, **bad}, "json")
        assert refused.status_code == 400 and refused.json()["field"] == "seed", refused.json()
    assert Run.objects.count() == 1


@pytest.mark.e2e
def test_evaluate_stops_early_and_says_so(live_db, admin_user, builder):
    _, version, dataset_version = world(admin_user, cases=120, every=2)
    out = StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command(
            "evaluate", "early-bot", "--dataset", "early", "--user", "builder",
            "--stop-early", "--seed", "4", stdout=out,
        )  # fmt: skip
    assert exited.value.code == 1
    text = out.getvalue()
    run = Run.objects.get()
    assert "stops early, cases in the order of seed 4" in text
    assert f"stopped early (seed 4): a gate failed; {run.sequential['trials_not_run']}" in text


def test_the_run_form_starts_a_run_that_stops_early_and_its_page_says_so(
    client, admin_user, builder, django_capture_on_commit_callbacks
):
    _, version, dataset_version = world(admin_user, cases=120, every=2)
    client.force_login(builder)
    choice = {"agent_version": version.pk, "dataset_version": dataset_version.pk}
    fields = {**choice, "repetitions": 1, "stop_early": "on"}
    page = client.post("/runs/start/", {**fields, "estimate": "1"}).content.decode()
    assert 'name="stop_early"' in page and "the most it can cost" in page
    key = re.search(r'name="estimated" value="([^"]*)"', page).group(1)
    # A confirmation of other choices than those estimated estimates again.
    client.post("/runs/start/", {**choice, "repetitions": 1, "confirm": "1", "estimated": key})
    assert not Run.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/runs/start/", {**fields, "confirm": "1", "estimated": key})
    run = Run.objects.get()
    assert run.stop_early and run.seed is not None
    html = client.get(f"/runs/{run.pk}/").content.decode()
    assert f"Stopped early (seed {run.seed}): a gate failed" in html
    assert "/docs/contract/#stopping-early" in html


def test_a_policy_makes_the_gate_runs_of_a_publish_request_stop_early(
    db, admin_user, builder, django_capture_on_commit_callbacks
):
    agent, version, dataset_version = world(admin_user, cases=100, every=2)
    policy = PublishingPolicy.objects.get(agent=agent)
    policy.gate_runs_stop_early = True
    policy.save()
    GateDataset.objects.create(agent=agent, dataset=dataset_version.dataset)
    with django_capture_on_commit_callbacks(execute=True):
        request = RequestPublication(acting_user=builder, agent_version=version).execute()
    (run,) = request.runs.all()
    assert run.stop_early and run.sequential["gates"]["case_pass_rate"]["decision"] == "fail"
    request.refresh_from_db()
    assert request.state == "blocked"
    assert request.decision["policy"]["gate_runs_stop_early"] is True
    gate = {g["name"]: g for g in request.decision["gates"]}["case_pass_rate"]
    assert gate["status"] == "fail" and "in seed order" in gate["detail"]
    # A client version's gate runs never stop early: its client makes the calls.
    client_version = factories.agent_version(agent)
    client_version.adapter = Adapter.CLIENT
    client_version.save()
    with django_capture_on_commit_callbacks(execute=True):
        waiting = RequestPublication(acting_user=builder, agent_version=client_version).execute()
    assert not waiting.runs.get().stop_early


def test_a_slow_reading_of_the_gates_spaces_the_next_one(settings):
    from evaluations.engine.shards import watch_interval

    settings.SHERLOCK_STOP_EARLY_SECONDS = 2
    assert watch_interval(0.0) == 2 and watch_interval(0.3) == 2
    assert watch_interval(1.0) == 5  # a reading of 1 s: the next in 5 s, never more than 1/6
