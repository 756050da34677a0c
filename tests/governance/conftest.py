"""Fixtures for the governance tests: a gate dataset and policy, an agent with an author, and
publish requests driven to a decision (passed, or blocked by `min_case_pass_rate`).

A version is "good" when it calls the tools each case expects (`echo`) and "bad" when it calls
none (`scripted` with a text input): with the real engine its gate runs fail the `Tools` check.
"""

from decimal import Decimal

import pytest
from django.utils import timezone
from guardian.shortcuts import assign_perm
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from agents.models import AgentVersion
from evaluations.choices import BillingCoverage, OutcomeVerdict, RunStatus, TrialStatus
from evaluations.models import Run, Trial
from evaluations.signals import run_finished
from governance.actions.request_bypass import RequestBypass
from governance.actions.request_publication import RequestPublication
from governance.models import PublishingPolicy
from governance.roles import OBJECT_PERMS
from tests import factories

REASON = "Incident INC-4521: the refund flow is down and this fix must ship tonight."

TOOLS_CHECK = {
    "label": "Tools",
    "kind": "tools_used",
    "params": {"match": "any_order"},
    "threshold": 1.0,
}


def tool_case(key, question):
    return (key, question, {"expected_tools": [{"name": "kb.search"}]})


@pytest.fixture
def gate_dataset(db):
    dataset = factories.dataset("gate-basics")
    factories.dataset_version(
        dataset,
        cases=[tool_case("shipping", "How long is shipping?"), tool_case("refund", "Refund?")],
        checks=[TOOLS_CHECK],
    )
    return dataset


@pytest.fixture
def policy(gate_dataset, admin_user):
    policy = PublishingPolicy.objects.create(
        name="Default",
        repetitions=1,
        min_case_pass_rate=1.0,
        created_by=admin_user,
    )
    policy.gate_datasets.add(gate_dataset)
    return policy


@pytest.fixture
def author(db):
    """The Builder who wrote the versions (separation of duties keeps them from publishing)."""
    return factories.user("author", role="Builder")


@pytest.fixture
def agent(db):
    return factories.agent("support-bot")


@pytest.fixture
def other_agent(db):
    return factories.agent("other-bot")


def make_version(agent, author, good=True):
    path = "tests.agents_under_test.echo" if good else "tests.agents_under_test.scripted"
    return AgentVersion.objects.create(
        agent=agent,
        number=agent.versions.count() + 1,
        adapter="python",
        config={"callable": path},
        created_by=author,
    )


@pytest.fixture
def good_version(agent, author):
    return make_version(agent, author, good=True)


@pytest.fixture
def bad_version(agent, author):
    return make_version(agent, author, good=False)


def finish_gate_runs(request, passed=True):
    """Finish a request's gate runs as the engine does: every trial completed with billed cost,
    a declared completion and its outcome (verified, or failed: a false success), the run's
    summary, then `run_finished`. These tests exercise governance's side of the signal without
    running agents; the end-to-end scenario (test_api_scenario.py) runs the real engine."""
    for run in request.runs.all():
        Trial.objects.filter(run=run).update(
            status=TrialStatus.COMPLETED,
            finished_at=timezone.now(),
            cost_usd=Decimal("0.01"),
            billing_coverage=BillingCoverage.BILLED,
            declared_complete=True,
            outcome_verdict=OutcomeVerdict.VERIFIED if passed else OutcomeVerdict.FAILED,
        )
        cases = run.trials_total // run.repetitions
        Run.objects.filter(pk=run.pk).update(
            status=RunStatus.COMPLETED,
            trials_done=run.trials_total,
            finished_at=timezone.now(),
            summary={
                "cases": cases,
                "passed": cases if passed else 0,
                "case_pass_rate": 1.0 if passed else 0.0,
            },
        )
        run_finished.send(sender=Run, run_id=run.pk, status=str(RunStatus.COMPLETED))
    request.refresh_from_db()
    return request


@pytest.fixture
def evaluate(policy):
    """Request publication and finish its gate runs, passing or failing."""

    def run(version, user, passed=True):
        request = RequestPublication(acting_user=user, agent_version=version).execute()
        return finish_gate_runs(request, passed)

    return run


@pytest.fixture
def passed_request(evaluate, good_version, author):
    return evaluate(good_version, author)


@pytest.fixture
def blocked_request(evaluate, bad_version, author):
    return evaluate(bad_version, author, passed=False)


@pytest.fixture
def approved_bypass(blocked_request, admin_user):
    return RequestBypass(
        acting_user=admin_user, publish_request=blocked_request, reason=REASON
    ).execute()


def api_client(user):
    """A DRF client authenticated with `user`'s token, as an API caller would be."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def grant_on(user, role, obj):
    """Give `user` the verbs of `role` on `obj` only (what GrantRole does, without its audit)."""
    for codename in OBJECT_PERMS[role][obj._meta.model_name]:
        assign_perm(codename, user, obj)
    return type(user).objects.get(pk=user.pk)  # a fresh permission cache


# --- Personas for the role matrix (STYLE.md item 10) -----------------------------------------

ROLES = ("Editor", "Builder", "Publisher", "Admin")
SCOPES = ("global", "here", "other")
PERSONAS = [(role, scope) for role in ROLES for scope in SCOPES] + [("outsider", None)]


def split(allowed):
    """The personas of the matrix that may do something, and those who may not."""
    return [p for p in PERSONAS if p in allowed], [p for p in PERSONAS if p not in allowed]


def persona_id(value):
    return value if value is not None else "-"


@pytest.fixture
def other_dataset(db):
    return factories.dataset("other-dataset")


@pytest.fixture
def persona(agent, other_agent, gate_dataset, other_dataset):
    """`persona(role, scope)`: a user holding `role` globally (its group), for this agent only
    ("here"), for another agent only ("other"), or an outsider with no role at all. An Editor's
    scoped grant is on a dataset (the gate dataset, or another), as Editors have no agent verbs.
    """

    def make(role, scope):
        user = factories.user(f"{role}-{scope}".lower())
        if scope == "global":
            return join_role(user, role)
        if scope in ("here", "other"):
            if role == "Editor":
                target = gate_dataset if scope == "here" else other_dataset
            else:
                target = agent if scope == "here" else other_agent
            return grant_on(user, role, target)
        return user

    return make


def join_role(user, role):
    from django.contrib.auth.models import Group

    user.groups.add(Group.objects.get(name=role))
    return type(user).objects.get(pk=user.pk)
