"""ExpireBypass: a bypass past its expiry becomes `expired` the moment it is touched."""

from django.db import transaction
from django.utils import timezone

from governance.actions._bypass_state import move_bypass
from governance.choices import BYPASS_ACTIVE, BypassState
from governance.models import Bypass
from sherlock.core.actions import Action


class ExpireBypass(Action):
    """Mark `bypass` expired if it is still requested or approved and its time is up.

    Bypasses expire lazily: approving, denying, revoking or using one first calls this (in the
    action's `prepare()`, committed before the action's own transaction), so the expiry is
    recorded even though the action that touched the bypass is then refused. The system is the
    actor. Compare-and-set on the state makes a second call a no-op; returns True when this
    call expired it.
    """

    noun = "bypass"
    verb = "expire"

    def __init__(self, *, bypass, acting_user=None):
        super().__init__(acting_user=acting_user)
        self.bypass = bypass

    def execute(self):
        with transaction.atomic():
            return self.perform()

    def perform(self):
        now = timezone.now()
        bypass = Bypass.objects.filter(
            pk=self.bypass.pk, state__in=BYPASS_ACTIVE, expires_at__lte=now
        ).first()
        if bypass is None:
            return False
        if not move_bypass(bypass, BypassState.EXPIRED, decided_at=now):
            return False
        self.audit(
            target=bypass,
            before={"state": bypass.state},
            after={"state": BypassState.EXPIRED, "expires_at": bypass.expires_at},
            reason="the bypass passed its expiry before it was used",
        )
        self.bypass.state = BypassState.EXPIRED
        return True
