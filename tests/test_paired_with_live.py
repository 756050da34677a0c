"""A candidate paired with the live version on the same cases: under a policy with a margin of
regression, publication pairs each gate run with the live version's latest completed run on the
same frozen dataset version (or starts one beside it), and the "no regression against live" gate
passes, fails or has insufficient evidence as Tango's paired interval says against minus the
margin; the discordant cases are listed regressions first, on the publish page and first on the
compare page, each linking to both runs' case pages."""

import json

import pytest

from evaluations.models import Run
from evaluations.stats import paired_comparison
from evaluations.verdict import gate_verdict, run_verdict
from governance.actions.publish_version import PublishVersion
from governance.actions.request_publication import RequestPublication
from governance.models import GateDataset, PublishingPolicy
from governance.publishing.decision import policy_applied
from tests.support import factories
from tests.support.governance import api_client

HERE = "tests.test_paired_with_live"
JSON = {"label": "JSON", "kind": "output_type", "params": {"type": "json"}, "threshold": 1.0}


def answers(case, broken=(), **_):
    """A JSON answer, billed; a plain-text one (failing the check) for the cases in `broken`."""
    good = case["input"]["n"] not in broken
    return {"output": json.dumps({"ok": 1}) if good else "not json", "cost_usd": 0.01}


@pytest.fixture
def world(live_db, admin_user, builder, publisher):
    def build(cases, live_broken, candidate_broken, margin=0.05):
        agent = factories.agent("paired-bot")
        live = factories.agent_version(
            agent, callable_path=f"{HERE}.answers", kwargs={"broken": live_broken}
        )
        candidate = factories.agent_version(
            agent, callable_path=f"{HERE}.answers", kwargs={"broken": candidate_broken}
        )
        dataset_version = factories.dataset_version(
            factories.dataset("paired"),
            cases=[(f"c{n:03d}", {"n": n}, {}) for n in range(cases)],
            checks=[JSON],
        )
        policy = PublishingPolicy.objects.create(
            name="Paired",
            agent=agent,
            min_case_pass_rate=0.5,
            max_regression=margin,
            min_useful_progress=None,
            min_tool_effect_integrity=None,
            creator_may_not_publish=False,
            created_by=admin_user,
        )
        policy.gate_datasets.add(dataset_version.dataset)
        GateDataset.objects.create(agent=agent, dataset=dataset_version.dataset)
        return agent, live, candidate

    return build


def request(version, builder, capture):
    with capture(execute=True):
        made = RequestPublication(acting_user=builder, agent_version=version).execute()
    made.refresh_from_db()
    return made


def publish(version, builder, publisher, capture):
    first = request(version, builder, capture)
    gate = {g["name"]: g for g in first.decision["gates"]}["regression"]
    assert gate["status"] == "n/a", gate  # nothing is live yet
    PublishVersion(acting_user=publisher, agent_version=version, reason="first").execute()


def test_a_regression_on_a_handful_of_cases_fails_and_names_them_first(
    world, builder, publisher, client, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    agent, live, candidate = world(30, live_broken=[], candidate_broken=list(range(10)))
    publish(live, builder, publisher, capture)
    made = request(candidate, builder, capture)
    (live_run,) = made.live_runs.all()
    assert live_run.agent_version == live and live_run.status == "completed"
    assert made.state == "blocked" and made.decision["verdict"]["outcome"] == "failed"
    gate = {g["name"]: g for g in made.decision["gates"]}["regression"]
    expected = paired_comparison([False] * 10 + [True] * 20, [True] * 30)
    assert gate["status"] == "fail"
    assert gate["value"]["paired"]["interval"] == [
        round(expected.low, 6),
        round(expected.high, 6),
    ]
    assert gate["value"]["paired"]["only_live"] == 10
    assert gate["value"]["paired"]["mcnemar_p"] == round(expected.mcnemar_p, 6)
    assert gate["threshold"] == {"max_regression": 0.05, "confidence": 0.95}
    (run,) = made.runs.all()
    first = gate["value"]["discordant"][0]
    assert first == {
        "key": "c000",
        "candidate_run": run.pk,
        "live_run": live_run.pk,
        "candidate_passed": False,
    }
    assert made.decision["live_runs"] == [
        {"id": live_run.pk, "agent_version": live.number, "status": "completed"}
    ]

    # The run page's verdict pairs the same way (the live version's latest run there).
    verdict = run_verdict(Run.objects.select_related("agent_version__agent").get(pk=run.pk))
    assert verdict.gate("regression").state == "fail"

    # The publish page lists the discordant cases first, each linking to both case pages.
    client.force_login(builder)
    html = client.get(f"/governance/versions/{candidate.pk}/").content.decode()
    assert html.index('id="discordant"') < html.index("<th>gate</th>")
    assert f'href="/runs/{run.pk}/cases/c000/"' in html
    assert f'href="/runs/{live_run.pk}/cases/c000/"' in html

    # So does the compare page, first.
    html = client.get(f"/runs/compare/?a={live_run.pk}&b={run.pk}").content.decode()
    assert html.index('id="changes"') < html.index('id="comparability"')
    assert f'href="/runs/{run.pk}/cases/c000/"' in html
    assert f'href="/runs/{live_run.pk}/cases/c000/"' in html
    assert "McNemar" in html

    # The compare API carries the same paired comparison.
    paired = api_client(builder).get(f"/api/v1/runs/compare/?a={live_run.pk}&b={run.pk}").json()
    assert paired["paired"]["only_a"] == 10 and paired["paired"]["only_b"] == 0
    assert paired["paired"]["low"] == pytest.approx(expected.low)

    # And the API's verdict of the run.
    body = api_client(builder).get(f"/api/v1/runs/{run.pk}/verdict/").json()
    assert {g["name"]: g["state"] for g in body["gates"]}["regression"] == "fail"


def test_no_discordant_case_on_enough_cases_passes(
    world, builder, publisher, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    agent, live, candidate = world(100, live_broken=[7], candidate_broken=[7])
    publish(live, builder, publisher, capture)
    made = request(candidate, builder, capture)
    gate = {g["name"]: g for g in made.decision["gates"]}["regression"]
    assert gate["status"] == "pass", gate["detail"]
    assert made.state == "passed"


def test_too_few_cases_to_tell_have_insufficient_evidence_and_a_fresh_live_run(
    world, builder, publisher, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    agent, live, candidate = world(30, live_broken=[], candidate_broken=[0])
    publish(live, builder, publisher, capture)
    Run.objects.filter(agent_version=live).delete()  # no live run on this dataset version
    made = request(candidate, builder, capture)
    (fresh,) = made.live_runs.all()
    assert fresh.agent_version == live and fresh.status == "completed"  # started beside it
    gate = {g["name"]: g for g in made.decision["gates"]}["regression"]
    assert gate["status"] == "insufficient", gate["detail"]
    assert made.decision["verdict"]["outcome"] == "insufficient"
    assert made.state == "blocked"
    # The run's gate cell names the gate its interval left undecided.
    from evaluations.contract.table import gate_cell

    (run,) = made.runs.all()
    verdict = gate_verdict([run], policy_applied(made.policy), [fresh])
    assert gate_cell(verdict.contract, verdict) == (
        "insufficient evidence (no regression against live)"
    )


def test_a_run_judged_alone_without_a_live_run_to_pair_with_is_not_held_back(
    world, builder, publisher, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    agent, live, candidate = world(30, live_broken=[], candidate_broken=[0])
    publish(live, builder, publisher, capture)
    Run.objects.filter(agent_version=live).delete()
    dataset_version = candidate.agent.policies.get().gate_datasets.get().latest_frozen
    run = factories.start_run(builder, candidate, dataset_version, capture)
    gate = run_verdict(Run.objects.select_related("agent_version__agent").get(pk=run.pk)).gate(
        "regression"
    )
    assert gate.state == "n/a" and "the publish gate runs one beside" in gate.detail


def test_a_list_of_paired_runs_costs_the_same_queries_as_one(
    world, builder, publisher, django_capture_on_commit_callbacks
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from evaluations.verdict import verdicts_of

    capture = django_capture_on_commit_callbacks
    agent, live, candidate = world(30, live_broken=[], candidate_broken=[0, 1])
    publish(live, builder, publisher, capture)
    dataset_version = candidate.agent.policies.get().gate_datasets.get().latest_frozen
    for _ in range(3):
        factories.start_run(builder, candidate, dataset_version, capture)
    runs = list(
        Run.objects.filter(agent_version=candidate)
        .select_related("agent_version__agent")
        .order_by("pk")
    )

    def queries(some):
        with CaptureQueriesContext(connection) as seen:
            found = verdicts_of(some)
        assert all(v.gate("regression").state == "insufficient" for v in found.values())
        return len(seen)

    assert queries(runs[:1]) == queries(runs)
