"""DeleteWebhook: an Admin removes an endpoint; its delivery log stays (with the URL)."""

from governance.actions._webhook import require_admin, snapshot
from governance.actions.base import GovernanceAction


class DeleteWebhook(GovernanceAction):
    noun = "webhook"
    verb = "delete"

    def __init__(self, *, acting_user, endpoint):
        super().__init__(acting_user=acting_user)
        self.endpoint = endpoint

    def refusal_target(self):
        return self.endpoint

    def check(self):
        require_admin(self.acting_user)

    def perform(self):
        endpoint = self.endpoint
        self.audit(
            target=endpoint,
            before=snapshot(endpoint),
        )
        endpoint.delete()
        return endpoint
