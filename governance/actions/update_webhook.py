"""UpdateWebhook: an Admin changes an endpoint's URL, events or active flag, or draws a new
secret (`rotate_secret`); the audit entry has the before and after, never the secret."""

from governance.actions._webhook import clean_fields, require_admin, snapshot
from governance.actions.base import GovernanceAction
from governance.models import WebhookEndpoint
from governance.models.webhooks import new_secret
from sherlock.core.errors import ActionInvalid

FIELDS = ("url", "events", "active")


class UpdateWebhook(GovernanceAction):
    noun = "webhook"
    verb = "change"

    def __init__(self, *, acting_user, endpoint, changes=None, rotate_secret=False):
        super().__init__(acting_user=acting_user)
        self.endpoint = endpoint
        self.changes = {k: v for k, v in (changes or {}).items() if k in FIELDS}
        self.rotate_secret = rotate_secret

    def refusal_target(self):
        return self.endpoint

    def lock(self):
        self.endpoint = WebhookEndpoint.objects.select_for_update().get(pk=self.endpoint.pk)

    def check(self):
        require_admin(self.acting_user)
        clean_fields(self.changes)
        if "active" in self.changes:
            self.changes["active"] = bool(self.changes["active"])
        before = snapshot(self.endpoint)
        if not self.rotate_secret and {**before, **self.changes} == before:
            raise ActionInvalid("Nothing changed.", field="changes")

    def perform(self):
        endpoint = self.endpoint
        before = snapshot(endpoint)
        for name, value in self.changes.items():
            setattr(endpoint, name, value)
        if self.rotate_secret:
            endpoint.secret = new_secret()
        endpoint.save()
        after = snapshot(endpoint)
        if self.rotate_secret:
            after["secret"] = "rotated"
        self.audit(
            target=endpoint,
            before=before,
            after=after,
        )
        return endpoint
