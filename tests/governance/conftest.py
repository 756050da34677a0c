"""Fixtures for the governance tests: a gate dataset and policy, an agent with an author, and
publish requests driven to a decision (passed, or blocked by `min_case_pass_rate`).

A version is "good" when it calls the tools each case expects (`echo`) and "bad" when it calls
none (`scripted` with a text input): with the real engine its gate runs fail the `Tools` check.
"""

import pytest

from governance.actions.request_bypass import RequestBypass
from governance.actions.request_publication import RequestPublication
from governance.models import GateDataset, PublishingPolicy
from tests.support import factories
from tests.support.governance import (
    REASON,
    TOOLS_CHECK,
    finish_gate_runs,
    grant_on,
    join_role,
    make_version,
    tool_case,
)


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
def policy(gate_dataset, admin_user, agent, other_agent):
    """The global policy, and the gate dataset chosen for the two agents of these tests (a
    global policy's own list gates no agent: `governance.models.gate_datasets`)."""
    policy = PublishingPolicy.objects.create(
        name="Default",
        repetitions=1,
        min_case_pass_rate=1.0,
        created_by=admin_user,
    )
    policy.gate_datasets.add(gate_dataset)
    for each in (agent, other_agent):
        GateDataset.objects.create(agent=each, dataset=gate_dataset)
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


@pytest.fixture
def good_version(agent, author):
    return make_version(agent, author, good=True)


@pytest.fixture
def bad_version(agent, author):
    return make_version(agent, author, good=False)


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
def pending_bypass(blocked_request, policy, admin_user):
    """A bypass waiting for a second Admin (the policy asks for one)."""
    policy.bypass_requires_second_admin = True
    policy.save(update_fields=["bypass_requires_second_admin"])
    return RequestBypass(
        acting_user=admin_user, publish_request=blocked_request, reason=REASON
    ).execute()


@pytest.fixture
def approved_bypass(blocked_request, admin_user):
    return RequestBypass(
        acting_user=admin_user, publish_request=blocked_request, reason=REASON
    ).execute()


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


@pytest.fixture
def incomplete_request(policy, good_version, author):
    """A request whose gate run has a trial in error (the agent raised): nothing failed, the
    evidence is missing, so the verdict is incomplete and the request blocked (fail closed)."""
    request = RequestPublication(acting_user=author, agent_version=good_version).execute()
    return finish_gate_runs(request, errored=1)
