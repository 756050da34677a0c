"""The run page, the compare page and API and `manage.py evaluate` show a run's contract under
the thresholds of the publishing policy in force for its agent (the publish gate's), else the
default thresholds, and say which (`evaluations.contract.applied`, governance's provider).

Two runs of one trial each, whose contract differs only by the budget: `cheap` costs $0.10 per
verified outcome (passes the default $0.60), `dear` $0.70 (fails it). A policy with a $0.05
budget makes `cheap` fail where the defaults pass; one with no budget makes `dear` pass where
the defaults fail.
"""

import html
import re
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluations.contract import (
    DEFAULT_APPLIED,
    DEFAULT_THRESHOLDS,
    DEFAULTS_SOURCE,
    applied_thresholds,
    register_thresholds_provider,
    thresholds_for,
    thresholds_provider,
)
from governance.models import PublishingPolicy
from governance.publishing.decision import in_force_thresholds
from tests.support import factories
from tests.support.contract_runs import add_trial, empty_run
from tests.support.factories import api

pytestmark = pytest.mark.django_db


def run_costing(usd, agent):
    run = empty_run(agent_version=factories.agent_version(agent))
    add_trial(run, cost_usd=usd)
    return run


@pytest.fixture
def agent():
    return factories.agent("refunds")


@pytest.fixture
def cheap(agent):
    return run_costing("0.10", agent)


@pytest.fixture
def dear(agent):
    return run_costing("0.70", agent)


def policy(name, agent=None, budget=None, version=1):
    return PublishingPolicy.objects.create(
        name=name, agent=agent, version=version, max_cost_per_verified_outcome_usd=budget
    )


def page(client, user, password, url):
    client.login(username=user.username, password=password)
    response = client.get(url)
    assert response.status_code == 200, response.status_code
    return html.unescape(re.sub(r"\s+", " ", response.content.decode()))


def between(body, start, end):
    return body.split(start, 1)[1].split(end, 1)[0]


# --- the hook ---------------------------------------------------------------------------------


def test_governance_registers_its_provider_when_it_starts():
    assert thresholds_provider() is in_force_thresholds


def test_without_a_provider_every_agent_gets_seed_003s_defaults_said_as_such(agent):
    policy("Tight", agent, Decimal("0.05"))
    previous = register_thresholds_provider(None)
    try:
        assert thresholds_for(agent) is DEFAULT_APPLIED
    finally:
        register_thresholds_provider(previous)
    assert DEFAULT_APPLIED.thresholds == DEFAULT_THRESHOLDS
    assert DEFAULT_APPLIED.source == DEFAULTS_SOURCE
    assert DEFAULTS_SOURCE == "the default thresholds: no publishing policy applies"
    assert DEFAULT_APPLIED.as_dict()["policy"] is None


def test_the_provider_gives_the_policy_in_force_as_the_gate_chooses_it(
    agent, django_assert_num_queries
):
    own, other, bare = agent, factories.agent("other"), factories.agent("bare")
    policy("Global", None, Decimal("1"))
    policy("Global", None, Decimal("2"), version=2)
    policy("Own", own, Decimal("0.05"))
    policy("Own", own, Decimal("0.04"), version=2)
    policy("Other's", other, None, version=1)

    with django_assert_num_queries(1):  # one query, whatever the number of agents
        applied = applied_thresholds([own, other, bare])

    for each in (own, other, bare):
        in_force = PublishingPolicy.objects.in_force_for(each)
        assert applied[each.pk].policy_id == in_force.pk
    assert applied[own.pk].source == "thresholds of policy «Own» v2"
    assert applied[own.pk].thresholds.max_cost_per_verified_outcome_usd == Decimal("0.04")
    assert applied[own.pk].scope == "agent"
    assert applied[bare.pk].source == "thresholds of policy «Global» v2"
    assert applied[bare.pk].scope == "global"
    assert applied[other.pk].thresholds.max_cost_per_verified_outcome_usd is None
    assert applied[own.pk].as_dict() == {
        "source": "thresholds of policy «Own» v2",
        "policy": {
            "id": applied[own.pk].policy_id,
            "name": "Own",
            "version": 2,
            "scope": "agent",
        },
        "values": {
            "max_false_successes": 0,
            "max_unknown_effects": 0,
            "min_useful_progress": "0.9",
            "min_tool_effect_integrity": "0.95",
            "max_cost_per_verified_outcome_usd": "0.0400",
            "min_quality": None,
            "coverage_required": True,
            "requires_verified_outcomes": False,
        },
    }


def test_no_policy_at_all_gives_the_defaults(agent):
    assert thresholds_for(agent) == DEFAULT_APPLIED


# --- the run page -----------------------------------------------------------------------------


def test_the_run_page_fails_a_run_the_agents_policy_fails_though_the_defaults_pass(
    client, builder, password, cheap, agent
):
    defaults = page(client, builder, password, f"/runs/{cheap.pk}/")
    assert 'id="verdict" class="verdict ok"' in defaults and "PASSED" in defaults
    assert f"Evaluated with {DEFAULTS_SOURCE}." in defaults

    policy("Tight", agent, Decimal("0.05"), version=3)
    body = page(client, builder, password, f"/runs/{cheap.pk}/")
    assert 'id="verdict" class="verdict bad"' in body
    assert "the contract fails at budget" in body
    thresholds = between(body, 'id="contract-thresholds">', "</p>")
    assert "Evaluated with thresholds of policy «Tight» v3" in thresholds
    assert "the publishing policy of agent refunds" in thresholds
    gates = between(body, 'class="gates"', "</ul>")
    assert "first failing gate" in gates
    # The policy's limit is stored with four decimals and shown to the cent, as money is.
    assert "$0.10 per verified outcome > max $0.05 " in gates


def test_the_run_page_passes_a_run_the_global_policy_passes_though_the_defaults_fail(
    client, builder, password, dear
):
    defaults = page(client, builder, password, f"/runs/{dear.pk}/")
    assert 'class="verdict bad"' in defaults and "the contract fails at budget" in defaults
    assert f"Evaluated with {DEFAULTS_SOURCE}." in defaults

    policy("No budget", None, None, version=2)  # the global one: no budget limit
    body = page(client, builder, password, f"/runs/{dear.pk}/")
    assert 'id="verdict" class="verdict ok"' in body and "PASSED" in body
    thresholds = between(body, 'id="contract-thresholds">', "</p>")
    assert "Evaluated with thresholds of policy «No budget» v2" in thresholds
    assert "the global publishing policy, in force for refunds" in thresholds


def test_the_run_page_reads_the_verdict_the_publish_gate_reaches(cheap, dear, agent):
    """The page's contract and the gate's decision (`decide`) agree under the policy."""
    from evaluations.contract.runs import run_contract
    from governance.publishing.decision import decide

    tight = policy("Tight", agent, Decimal("0.05"))
    for run in (cheap, dear):
        run.summary = {"cases": 1, "passed": 1, "case_pass_rate": 1.0}
        shown = run_contract(run, thresholds_for(agent).thresholds)
        gate = decide([run], tight)
        assert shown.first_failing_gate == gate["first_failing_gate"] == "budget"


def test_the_policy_costs_the_run_page_one_query_whatever_the_policies(
    client, builder, password, cheap, agent
):
    client.login(username=builder.username, password=password)

    def queries():
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(f"/runs/{cheap.pk}/").status_code == 200
        return len(ctx)

    none = queries()
    policy("Global", None, None)
    for version in (1, 2, 3):
        policy("Own", agent, Decimal("0.05"), version=version)
    assert queries() == none
    previous = register_thresholds_provider(None)
    try:
        assert queries() == none - 1  # the policy's one query
    finally:
        register_thresholds_provider(previous)


# --- the compare page and API -----------------------------------------------------------------


def test_the_compare_page_evaluates_both_runs_under_their_agents_policy(
    client, builder, password, cheap, dear, agent
):
    url = f"/runs/compare/?a={cheap.pk}&b={dear.pk}"
    defaults = page(client, builder, password, url)
    assert f"A and B: evaluated with {DEFAULTS_SOURCE}." in defaults
    gate = between(defaults, "<td>gate</td>", "</tr>")
    assert ">pass<" in gate and ">fail (budget)<" in gate

    policy("Tight", agent, Decimal("0.05"), version=3)
    body = page(client, builder, password, url)
    assert "A and B: evaluated with thresholds of policy «Tight» v3." in body
    gate = between(body, "<td>gate</td>", "</tr>")
    assert ">pass<" not in gate and gate.count(">fail (budget)<") == 2

    policy("Loose", agent, None, version=4)
    body = page(client, builder, password, url)
    assert "A and B: evaluated with thresholds of policy «Loose» v4." in body
    gate = between(body, "<td>gate</td>", "</tr>")
    assert gate.count(">pass<") == 2 and "fail" not in gate


def test_the_compare_page_names_each_sides_thresholds_when_they_differ(
    client, builder, password, cheap
):
    other = run_costing("0.10", factories.agent("other"))
    policy("Tight", other.agent_version.agent, Decimal("0.05"))
    body = page(client, builder, password, f"/runs/compare/?a={cheap.pk}&b={other.pk}")
    thresholds = between(body, 'id="contract-thresholds">', "</p>")
    assert f"A: evaluated with {DEFAULTS_SOURCE}." in thresholds
    assert "B: evaluated with thresholds of policy «Tight» v1." in thresholds
    gate = between(body, "<td>gate</td>", "</tr>")
    assert gate.index(">pass<") < gate.index(">fail (budget)<")


def test_the_compare_page_shows_a_quality_floor_only_one_sides_policy_sets(
    client, builder, password, cheap
):
    other = run_costing("0.10", factories.agent("other"))
    PublishingPolicy.objects.create(
        name="Quality", agent=other.agent_version.agent, min_quality=0.5
    )
    body = page(client, builder, password, f"/runs/compare/?a={cheap.pk}&b={other.pk}")
    quality = between(body, "<td>gate: quality</td>", "</tr>")
    assert "fail" in quality  # no graded trial: the floor fails closed on B


def test_the_compare_api_gives_each_sides_thresholds(builder, cheap, dear, agent):
    def compare():
        response = api(builder).get("/api/v1/runs/compare/", {"a": cheap.pk, "b": dear.pk})
        assert response.status_code == 200, response.json()
        return response.json()

    body = compare()
    assert body["thresholds"] == DEFAULTS_SOURCE
    assert body["a"]["thresholds"]["policy"] is None
    assert [row["gate"] for row in body["table"]] == ["pass", "fail (budget)"]

    tight = policy("Tight", agent, Decimal("0.05"), version=3)
    body = compare()
    assert body["thresholds"] == "thresholds of policy «Tight» v3"
    for side in ("a", "b"):
        assert body[side]["thresholds"]["policy"] == {
            "id": tight.pk,
            "name": "Tight",
            "version": 3,
            "scope": "agent",
        }
        assert body[side]["thresholds"]["values"]["max_cost_per_verified_outcome_usd"] == "0.0500"
    assert [row["gate"] for row in body["table"]] == ["fail (budget)", "fail (budget)"]


def test_the_compare_api_says_each_side_when_the_thresholds_differ(builder, cheap):
    other = run_costing("0.10", factories.agent("other"))
    policy("Tight", other.agent_version.agent, Decimal("0.05"))
    response = api(builder).get("/api/v1/runs/compare/", {"a": cheap.pk, "b": other.pk})
    body = response.json()
    assert body["thresholds"] == f"a: {DEFAULTS_SOURCE}; b: thresholds of policy «Tight» v1"
    assert [row["gate"] for row in body["table"]] == ["pass", "fail (budget)"]


def test_a_budget_gate_shows_the_digits_that_differ():
    """A limit of $1.0050 and a cost of $1.01 both round to "$1.01": the detail says both to
    the ten-thousandth instead of "$1.01 > max $1.01"."""
    from types import SimpleNamespace

    from evaluations.contract.measures import _budget_gate

    limits = SimpleNamespace(max_cost_per_verified_outcome_usd=Decimal("1.0050"))
    gate = _budget_gate(Decimal("1.01"), SimpleNamespace(outcomes_verified=3), limits)
    assert gate.status == "fail"
    assert gate.detail == "$1.0100 per verified outcome > max $1.0050"
    within = _budget_gate(Decimal("0.50"), SimpleNamespace(outcomes_verified=3), limits)
    assert within.detail == "$0.50 per verified outcome <= max $1.01"
