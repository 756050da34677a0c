"""CreateWebhook: an Admin registers an endpoint for some events; a fresh secret is drawn."""

from governance.actions._webhook import clean_fields, require_admin, snapshot
from governance.actions.base import GovernanceAction
from governance.models import WebhookEndpoint
from governance.models.webhooks import new_secret


class CreateWebhook(GovernanceAction):
    noun = "webhook"
    verb = "create"

    def __init__(self, *, acting_user, url, events, active=True):
        super().__init__(acting_user=acting_user)
        self.url, self.events, self.active = url, events, active

    def check(self):
        require_admin(self.acting_user)
        cleaned = clean_fields({"url": self.url, "events": self.events})
        self.url, self.events = cleaned["url"], cleaned["events"]

    def perform(self):
        endpoint = WebhookEndpoint.objects.create(
            url=self.url,
            events=self.events,
            active=bool(self.active),
            secret=new_secret(),
            created_by=self.acting_user,
        )
        self.audit(
            target=endpoint,
            after={**snapshot(endpoint), "secret": "drawn"},
        )
        return endpoint
