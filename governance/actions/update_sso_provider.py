"""UpdateSSOProvider: an Admin says where a provider's groups are and whether it is strict."""

from governance.actions.sso_fields import SSOVerb
from governance.models import SSOProvider
from sherlock.core.errors import ActionInvalid

CLAIM_PATH_MAX = 200


class UpdateSSOProvider(SSOVerb):
    """Set the claim path (a dotted path into the claims: `groups`, `realm_access.roles`) and
    strict mode of `provider_id`'s mapping, creating it on first use. Audited with before and
    after. Returns the `SSOProvider`."""

    verb = "configure"
    text_limits = {"claim_path": CLAIM_PATH_MAX}

    def __init__(self, *, acting_user, provider_id, claim_path, strict):
        super().__init__(acting_user=acting_user)
        self.provider_id = provider_id
        self.claim_path = (claim_path or "").strip()
        self.strict = bool(strict)

    def check(self):
        self.check_role()
        self.check_provider(self.provider_id)
        parts = self.claim_path.split(".")
        if not self.claim_path or not all(part.strip() for part in parts):
            raise ActionInvalid(
                "A claim path names a claim, with dots between levels (groups, "
                "realm_access.roles).",
                field="claim_path",
            )

    def perform(self):
        provider, created = SSOProvider.objects.get_or_create(provider_id=self.provider_id)
        before = None if created else {"claim_path": provider.claim_path, "strict": provider.strict}
        provider.claim_path, provider.strict = self.claim_path, self.strict
        provider.save(update_fields=["claim_path", "strict"])
        self.audit(
            target=provider,
            before=before,
            after={"claim_path": provider.claim_path, "strict": provider.strict},
        )
        return provider
