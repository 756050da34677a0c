"""Publishing policies are versioned: a change writes version N+1 and the audit shows the
before and after; only the version in force can be changed."""

import pytest

from governance.actions.create_policy import CreatePolicy
from governance.actions.update_policy import UpdatePolicy
from governance.models import AuditEntry, PublishingPolicy
from sherlock.core.errors import ActionConflict, ActionInvalid


def test_changing_a_policy_writes_its_next_version_and_keeps_the_old_row(
    admin_user, policy, gate_dataset, other_dataset
):
    new = UpdatePolicy(
        acting_user=admin_user,
        policy=policy,
        changes={"min_case_pass_rate": 0.8},
        gate_datasets=[gate_dataset, other_dataset],
        reason="second gate dataset",
    ).execute()
    policy.refresh_from_db()
    assert (policy.version, policy.min_case_pass_rate) == (1, 1.0)
    assert (new.version, new.min_case_pass_rate, new.scope_key) == (2, 0.8, "global")
    assert set(new.gate_datasets.all()) == {gate_dataset, other_dataset}
    assert list(policy.gate_datasets.all()) == [gate_dataset]
    assert PublishingPolicy.objects.current("global") == new
    entry = AuditEntry.objects.get(action="governance.policy.change")
    assert entry.before["min_case_pass_rate"] == 1.0 and entry.after["min_case_pass_rate"] == 0.8
    assert entry.after["gate_datasets"] == ["gate-basics", "other-dataset"]
    assert (entry.before["version"], entry.after["version"]) == (1, 2)
    assert entry.reason == "second gate dataset"


def test_only_the_version_in_force_can_be_changed(admin_user, policy):
    UpdatePolicy(acting_user=admin_user, policy=policy, changes={"repetitions": 2}).execute()
    with pytest.raises(ActionConflict) as refused:
        UpdatePolicy(acting_user=admin_user, policy=policy, changes={"repetitions": 3}).execute()
    assert refused.value.code == "stale_policy"


def test_a_change_that_changes_nothing_is_refused(admin_user, policy):
    with pytest.raises(ActionInvalid):
        UpdatePolicy(acting_user=admin_user, policy=policy, changes={"repetitions": 1}).execute()


@pytest.mark.parametrize(
    "changes",
    [{"min_case_pass_rate": 1.5}, {"enforcement": "lenient"}, {"owner": "me"}],
)
def test_invalid_policy_values_are_refused(changes, admin_user, policy):
    with pytest.raises(ActionInvalid):
        UpdatePolicy(acting_user=admin_user, policy=policy, changes=changes).execute()
    assert PublishingPolicy.objects.count() == 1


def test_a_scope_gets_one_first_version(admin_user, agent, policy):
    own = CreatePolicy(acting_user=admin_user, agent=agent, name="Own").execute()
    assert (own.scope_key, own.version) == (f"agent:{agent.pk}", 1)
    # The audit entry names the agent, never its id.
    entry = AuditEntry.objects.filter(action="governance.policy.create").last()
    assert entry.after["scope"] == f"agent {agent.slug}"
    with pytest.raises(ActionConflict):
        CreatePolicy(acting_user=admin_user, name="Second global").execute()
    assert PublishingPolicy.objects.in_force_for(agent) == own
