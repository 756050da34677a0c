"""Publishing as docs/governance.md says: the gate runs of the policy in force, one decision,
one publish path that retires the previous version atomically, enforcement levels, separation
of duties, stale decisions and roll back through the same gate."""

import pytest

from agents.choices import VersionState
from evaluations.choices import RunPurpose
from governance.actions.create_policy import CreatePolicy
from governance.actions.publish_version import PublishVersion
from governance.actions.request_publication import RequestPublication
from governance.actions.retire_version import RetireVersion
from governance.actions.rollback_version import RollBackVersion
from governance.actions.update_policy import UpdatePolicy
from governance.choices import Enforcement, RequestState
from governance.models import AuditEntry, GateDataset
from sherlock.core.errors import ActionConflict, ActionDenied
from tests.support import factories
from tests.support.governance import (
    TOOLS_CHECK,
    finish_gate_runs,
    join_role,
    make_version,
    tool_case,
)


def entries(action, **filters):
    return AuditEntry.objects.filter(action=action, **filters)


def set_policy(policy, **fields):
    for name, value in fields.items():
        setattr(policy, name, value)
    policy.save(update_fields=list(fields))


# --- requesting publication ---------------------------------------------------------------------


def test_requesting_publication_starts_one_gate_run_per_gate_dataset(
    author, good_version, policy, gate_dataset
):
    second = factories.dataset("second-gate")
    factories.dataset_version(second, cases=[tool_case("x", "hi")], checks=[TOOLS_CHECK])
    GateDataset.objects.create(agent=good_version.agent, dataset=second)  # chosen for it
    request = RequestPublication(acting_user=author, agent_version=good_version).execute()
    runs = list(request.runs.order_by("dataset_version__dataset__slug"))
    assert [r.dataset_version.dataset.slug for r in runs] == ["gate-basics", "second-gate"]
    assert all(r.purpose == RunPurpose.GATE and r.agent_version == good_version for r in runs)
    entry = entries("governance.request.create").get()
    assert entry.after["runs"] == sorted(r.pk for r in runs)
    assert entry.after["policy"] == {"id": policy.pk, "scope": "global", "version": 1}


def test_gate_runs_pin_the_latest_frozen_version_of_a_gate_dataset(
    author, good_version, policy, gate_dataset
):
    newer = factories.dataset_version(gate_dataset, cases=[tool_case("a", "?")], checks=[])
    factories.dataset_version(gate_dataset, cases=[tool_case("b", "?")], frozen=False)
    request = RequestPublication(acting_user=author, agent_version=good_version).execute()
    assert request.runs.get().dataset_version == newer


def test_an_agent_policy_wins_over_the_global_one(
    admin_user, author, agent, good_version, policy, other_dataset
):
    factories.dataset_version(other_dataset, cases=[tool_case("z", "?")], checks=[TOOLS_CHECK])
    own = CreatePolicy(
        acting_user=admin_user,
        agent=agent,
        name="Own",
        repetitions=3,
        gate_datasets=[other_dataset],
    ).execute()
    request = RequestPublication(acting_user=author, agent_version=good_version).execute()
    run = request.runs.get()
    assert request.policy == own
    assert (run.dataset_version.dataset, run.repetitions) == (other_dataset, 3)


def test_publication_cannot_be_requested_without_a_policy(author, good_version):
    with pytest.raises(ActionConflict) as refused:
        RequestPublication(acting_user=author, agent_version=good_version).execute()
    assert refused.value.code == "no_policy"


def test_a_request_still_evaluating_is_not_duplicated(author, good_version, policy):
    RequestPublication(acting_user=author, agent_version=good_version).execute()
    with pytest.raises(ActionConflict) as refused:
        RequestPublication(acting_user=author, agent_version=good_version).execute()
    assert refused.value.code == "already_evaluating"
    assert good_version.publish_requests.count() == 1


def test_requesting_again_supersedes_the_earlier_decision(author, passed_request, good_version):
    again = RequestPublication(
        acting_user=author, agent_version=good_version, supersede=passed_request.pk
    ).execute()
    passed_request.refresh_from_db()
    assert passed_request.state == RequestState.SUPERSEDED
    assert again.state == RequestState.EVALUATING
    assert entries("governance.request.supersede", target_id=str(passed_request.pk)).exists()
    created = entries("governance.request.create", target_id=str(again.pk)).get()
    assert created.after["supersedes"] == passed_request.pk


@pytest.mark.parametrize("fixture", ["passed_request", "blocked_request"])
def test_asking_again_while_a_decision_is_open_must_name_it(request, author, fixture):
    """A passed request waits for a Publisher, a blocked one for a bypass: asking again
    throws that away and pays for new gate runs, so it is refused unless the caller names it."""
    open_request = request.getfixturevalue(fixture)
    version = open_request.agent_version
    with pytest.raises(ActionConflict) as refused:
        RequestPublication(acting_user=author, agent_version=version).execute()
    assert refused.value.code == "already_decided"
    assert f"supersede={open_request.pk}" in str(refused.value)
    open_request.refresh_from_db()
    assert open_request.state in (RequestState.PASSED, RequestState.BLOCKED)
    assert version.publish_requests.count() == 1
    assert entries("governance.request.refused", target_id=str(version.pk)).get().after == {
        "verb": "create",
        "code": "already_decided",
    }


def test_naming_another_request_than_the_open_one_is_refused(author, passed_request, good_version):
    with pytest.raises(ActionConflict) as refused:
        RequestPublication(
            acting_user=author, agent_version=good_version, supersede=passed_request.pk + 1
        ).execute()
    assert refused.value.code == "supersede_mismatch"
    passed_request.refresh_from_db()
    assert passed_request.state == RequestState.PASSED


def test_a_decision_under_a_policy_no_longer_in_force_is_superseded_unnamed(
    author, passed_request, good_version, admin_user
):
    UpdatePolicy(
        acting_user=admin_user, policy=passed_request.policy, changes={"repetitions": 2}
    ).execute()
    again = RequestPublication(acting_user=author, agent_version=good_version).execute()
    passed_request.refresh_from_db()
    assert passed_request.state == RequestState.SUPERSEDED
    assert again.policy.version == 2


# --- the one publish path -----------------------------------------------------------------------


def test_publishing_makes_the_version_live_and_records_the_decision(
    publisher, passed_request, good_version
):
    PublishVersion(acting_user=publisher, agent_version=good_version, reason="go").execute()
    good_version.refresh_from_db()
    passed_request.refresh_from_db()
    assert good_version.state == VersionState.PUBLISHED
    assert good_version.agent.live_version == good_version
    assert passed_request.state == RequestState.PUBLISHED
    assert passed_request.published_by == publisher
    entry = entries("governance.version.publish").get()
    assert entry.before == {"state": "draft", "live_version": None}
    assert entry.after["publish_request"] == passed_request.pk
    assert entry.after["release"] == "pass" and entry.reason == "go"


def test_publishing_retires_the_previous_live_version_in_the_same_step(
    publisher, author, evaluate, agent, passed_request, good_version
):
    PublishVersion(acting_user=publisher, agent_version=good_version).execute()
    newer = make_version(agent, author)
    evaluate(newer, author)
    PublishVersion(acting_user=publisher, agent_version=newer).execute()
    good_version.refresh_from_db()
    agent.refresh_from_db()
    assert good_version.state == VersionState.RETIRED
    assert agent.live_version == newer
    retire = entries("governance.version.retire", target_id=str(good_version.pk)).get()
    assert retire.reason == "replaced by v2"
    assert retire.sequence < entries("governance.version.publish").order_by("-sequence")[0].sequence


def test_a_published_version_cannot_be_published_again(publisher, passed_request, good_version):
    PublishVersion(acting_user=publisher, agent_version=good_version).execute()
    with pytest.raises(ActionConflict) as refused:
        PublishVersion(acting_user=publisher, agent_version=good_version).execute()
    assert refused.value.code == "already_published"


def test_a_version_cannot_be_published_while_its_gate_runs_evaluate(
    publisher, author, good_version, policy
):
    RequestPublication(acting_user=author, agent_version=good_version).execute()
    with pytest.raises(ActionConflict) as refused:
        PublishVersion(acting_user=publisher, agent_version=good_version).execute()
    assert refused.value.code == "evaluating"


def test_a_version_without_a_publish_request_cannot_be_published(publisher, good_version, policy):
    with pytest.raises(ActionConflict) as refused:
        PublishVersion(acting_user=publisher, agent_version=good_version).execute()
    assert refused.value.code == "no_request"


@pytest.mark.parametrize("enforcement", [Enforcement.SOFT, Enforcement.HARD])
def test_nobody_may_publish_a_blocked_version_not_even_an_admin(
    enforcement, admin_user, policy, blocked_request, bad_version
):
    set_policy(policy, enforcement=enforcement)
    with pytest.raises(ActionConflict) as refused:
        PublishVersion(acting_user=admin_user, agent_version=bad_version).execute()
    assert refused.value.code == "blocked"
    assert "false_success" in str(refused.value)
    bad_version.refresh_from_db()
    assert bad_version.state == VersionState.DRAFT
    refusal = entries("governance.version.refused").get()
    assert refusal.after == {"verb": "publish", "code": "blocked"}


def test_an_advisory_policy_reports_a_blocked_decision_but_does_not_block(
    publisher, policy, blocked_request, bad_version
):
    set_policy(policy, enforcement=Enforcement.ADVISORY)
    PublishVersion(acting_user=publisher, agent_version=bad_version).execute()
    bad_version.refresh_from_db()
    assert bad_version.state == VersionState.PUBLISHED
    entry = entries("governance.version.publish").get()
    assert entry.after["release"] == "fail" and entry.after["cleared_by"] == "advisory"


def test_the_creator_of_a_version_may_not_publish_it(author, passed_request, good_version):
    author = join_role(author, "Publisher")
    with pytest.raises(ActionDenied) as refused:
        PublishVersion(acting_user=author, agent_version=good_version).execute()
    assert refused.value.code == "separation_of_duties"


def test_the_creator_may_publish_when_the_policy_allows_it(
    author, policy, passed_request, good_version
):
    set_policy(policy, creator_may_not_publish=False)
    author = join_role(author, "Publisher")
    PublishVersion(acting_user=author, agent_version=good_version).execute()
    good_version.refresh_from_db()
    assert good_version.state == VersionState.PUBLISHED


def test_a_decision_made_under_an_older_policy_version_is_stale(
    admin_user, publisher, policy, passed_request, good_version
):
    UpdatePolicy(acting_user=admin_user, policy=policy, changes={"repetitions": 2}).execute()
    with pytest.raises(ActionConflict) as refused:
        PublishVersion(acting_user=publisher, agent_version=good_version).execute()
    assert refused.value.code == "stale_decision"


def test_a_publish_request_moved_meanwhile_refuses_the_whole_publish(
    monkeypatch, publisher, passed_request, good_version
):
    # The request's compare-and-set is the last check: losing it rolls the version back too.
    from governance.actions import publish_version

    monkeypatch.setattr(publish_version, "move_request", lambda *args, **kwargs: False)
    with pytest.raises(ActionConflict) as refused:
        PublishVersion(acting_user=publisher, agent_version=good_version).execute()
    assert refused.value.code == "conflict"
    good_version.refresh_from_db()
    assert good_version.state == VersionState.DRAFT
    assert type(good_version.agent).objects.get(pk=good_version.agent_id).live_version is None
    assert entries("governance.version.refused").exists()
    assert not entries("governance.version.publish").exists()


@pytest.mark.parametrize(
    "from_state,to_state",
    [
        (RequestState.PUBLISHED, RequestState.SUPERSEDED),
        (RequestState.SUPERSEDED, RequestState.PASSED),
        (RequestState.EVALUATING, RequestState.PUBLISHED),
        (RequestState.PASSED, RequestState.BYPASSED),
    ],
)
def test_a_request_moves_only_along_the_declared_transitions(from_state, to_state, passed_request):
    from governance.actions._request_state import move_request
    from governance.models import PublishRequest

    PublishRequest.objects.filter(pk=passed_request.pk).update(state=from_state)
    passed_request.refresh_from_db()
    with pytest.raises(ValueError):
        move_request(passed_request, to_state)
    passed_request.refresh_from_db()
    assert passed_request.state == from_state


def test_a_request_moved_by_someone_else_is_not_moved_again(passed_request):
    from governance.actions._request_state import move_request
    from governance.models import PublishRequest

    stale = PublishRequest.objects.get(pk=passed_request.pk)
    assert move_request(passed_request, RequestState.SUPERSEDED)
    assert not move_request(stale, RequestState.PUBLISHED)  # it read `passed`; it is not now
    stale.refresh_from_db()
    assert stale.state == RequestState.SUPERSEDED


# --- retire and roll back -----------------------------------------------------------------------


@pytest.fixture
def retired(publisher, passed_request, good_version):
    PublishVersion(acting_user=publisher, agent_version=good_version).execute()
    return RetireVersion(acting_user=publisher, agent_version=good_version).execute()


def test_retiring_leaves_the_agent_without_a_live_version(retired, agent):
    agent.refresh_from_db()
    assert agent.live_version is None
    assert entries("governance.version.retire").get().after == {"state": "retired", "live": False}


def test_only_a_published_version_can_be_retired(publisher, good_version):
    with pytest.raises(ActionConflict) as refused:
        RetireVersion(acting_user=publisher, agent_version=good_version).execute()
    assert refused.value.code == "not_published"


def test_rolling_back_goes_through_the_gate_again(publisher, retired):
    with pytest.raises(ActionConflict) as refused:
        RollBackVersion(acting_user=publisher, agent_version=retired).execute()
    assert refused.value.code == "request_closed"


def test_a_publisher_may_ask_for_the_gate_again_and_roll_back(publisher, author, agent, retired):
    current = make_version(agent, author)
    finish_gate_runs(RequestPublication(acting_user=author, agent_version=current).execute())
    PublishVersion(acting_user=publisher, agent_version=current).execute()
    again = RequestPublication(acting_user=publisher, agent_version=retired).execute()
    finish_gate_runs(again)
    RollBackVersion(acting_user=publisher, agent_version=retired).execute()
    retired.refresh_from_db()
    current.refresh_from_db()
    agent.refresh_from_db()
    assert (retired.state, current.state) == (VersionState.PUBLISHED, VersionState.RETIRED)
    assert agent.live_version == retired
    assert entries("governance.version.rollback", target_id=str(retired.pk)).exists()


def test_a_blocked_rollback_is_refused(publisher, author, retired):
    again = RequestPublication(acting_user=author, agent_version=retired).execute()
    finish_gate_runs(again, passed=False)
    with pytest.raises(ActionConflict) as refused:
        RollBackVersion(acting_user=publisher, agent_version=retired).execute()
    assert refused.value.code == "blocked"


def test_a_draft_is_published_not_rolled_back(publisher, passed_request, good_version):
    with pytest.raises(ActionConflict) as refused:
        RollBackVersion(acting_user=publisher, agent_version=good_version).execute()
    assert refused.value.code == "not_retired"
