"""What the three verbs of the SSO mapping share: only a global Admin edits it, and only for
a provider the settings configure (SHERLOCK_OIDC_PROVIDERS)."""

from django.conf import settings

from governance.actions.base import GovernanceAction
from governance.people.roles import is_global_admin
from sherlock.core.errors import ActionDenied, ActionInvalid


def configured_provider_ids():
    return [app["provider_id"] for app in settings.SHERLOCK_OIDC_APPS]


class SSOVerb(GovernanceAction):
    noun = "sso"

    def check_role(self):
        if not is_global_admin(self.acting_user):
            raise ActionDenied("Only an Admin may change the single sign-on mapping.")

    def check_provider(self, provider_id):
        if provider_id not in configured_provider_ids():
            raise ActionInvalid(
                f"{provider_id!r} is no configured provider (SHERLOCK_OIDC_PROVIDERS).",
                field="provider",
            )
