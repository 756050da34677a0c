"""UpdatePolicy: an Admin changes a publishing policy, which writes its next version."""

from governance.actions.base import GovernanceAction
from governance.actions.policy_fields import POLICY_FIELDS, snapshot, validate
from governance.models import PublishingPolicy
from governance.people.roles import is_global_admin
from sherlock.core.errors import ActionConflict, ActionDenied, ActionInvalid


class UpdatePolicy(GovernanceAction):
    """Write version N+1 of `policy`'s scope with `changes` applied (and `gate_datasets` when
    given). Rows are never edited: a decision records the exact version it used, and requests
    decided under an older version must be requested again before they can be published.

    Only the version in force may be changed (a form opened on an older version is stale); the
    scope's newest row is locked so two Admins cannot both write version N+1."""

    noun = "policy"
    verb = "change"

    def __init__(self, *, acting_user, policy, changes=None, gate_datasets=None, reason=""):
        super().__init__(acting_user=acting_user)
        self.policy = policy
        self.changes = dict(changes or {})
        self.gate_datasets = None if gate_datasets is None else list(gate_datasets)
        self.reason = reason
        self.current = None  # the scope's newest row, locked by lock() inside execute()

    def refusal_target(self):
        return self.policy

    def lock(self):
        self.current = (
            PublishingPolicy.objects.select_for_update()
            .filter(scope_key=self.policy.scope_key)
            .order_by("-version")
            .first()
        )

    def check_role(self):
        if not is_global_admin(self.acting_user):
            raise ActionDenied("Only an Admin may manage publishing policies.")

    def check(self):
        self.check_role()
        current = self.current or PublishingPolicy.objects.current(self.policy.scope_key)
        if current.pk != self.policy.pk:
            raise ActionConflict(
                f"{self.policy} is not the version in force ({current} is); "
                "change the newest version.",
                code="stale_policy",
            )
        old_datasets = list(self.policy.gate_datasets.all())
        self.new = self._next_row()
        validate(self.new, self.changes)
        before = snapshot(self.policy, old_datasets)
        after = snapshot(self.new, self._datasets(old_datasets))
        if {k: v for k, v in after.items() if k != "version"} == {
            k: v for k, v in before.items() if k != "version"
        }:
            raise ActionInvalid("Nothing changed.", field="changes")
        self.before, self.after = before, after

    def _datasets(self, old):
        return old if self.gate_datasets is None else self.gate_datasets

    def _next_row(self):
        values = {name: getattr(self.policy, name) for name in POLICY_FIELDS}
        values.update({k: v for k, v in self.changes.items() if k in POLICY_FIELDS})
        return PublishingPolicy(
            agent=self.policy.agent,
            scope_key=self.policy.scope_key,
            version=self.policy.version + 1,
            created_by=self.acting_user,
            **values,
        )

    def perform(self):
        new = self.new
        new.save(force_insert=True)
        new.gate_datasets.set(self._datasets(list(self.policy.gate_datasets.all())))
        self.after["version"] = new.version
        self.audit(
            target=new,
            before=self.before,
            after=self.after,
            reason=self.reason,
        )
        return new
