"""RevokeAPIKey: the key's owner or an Admin revokes an API key for good."""

from django.utils import timezone

from governance.actions.base import GovernanceAction
from governance.models import APIKey
from governance.people.roles import is_global_admin
from sherlock.core.errors import ActionConflict, ActionDenied


class RevokeAPIKey(GovernanceAction):
    """Revoke `api_key`: from the next request on it authenticates nobody. Its owner or a
    global Admin may revoke it (`acting_user=None`: the operator at the shell). The row stays,
    marked with when and by whom, as the record of the key; a revoked key is never revived.
    The row is locked, so two revocations cannot both succeed."""

    noun = "apikey"
    verb = "revoke"

    def __init__(self, *, acting_user, api_key, reason=""):
        super().__init__(acting_user=acting_user)
        self.api_key = api_key
        self.reason = reason

    def refusal_target(self):
        return self.api_key.user

    def lock(self):
        self.api_key = (
            APIKey.objects.select_for_update().select_related("user").get(pk=self.api_key.pk)
        )

    def check(self):
        acting = self.acting_user
        owner = self.api_key.user_id
        if acting is not None and acting.pk != owner and not is_global_admin(acting):
            raise ActionDenied("Only the key's owner or an Admin may revoke it.")
        if self.api_key.revoked:
            raise ActionConflict("This key is already revoked.", code="already_revoked")

    def perform(self):
        key = self.api_key
        key.revoked = True
        key.revoked_at = timezone.now()
        key.revoked_by = self.acting_user
        key.save(update_fields=["revoked", "revoked_at", "revoked_by"])
        self.audit(
            target=key.user,
            before={"name": key.name, "prefix": key.prefix, "state": "active"},
            after={"state": "revoked"},
            reason=self.reason,
        )
        return key
