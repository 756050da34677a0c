"""django-q2 tasks of governance: thin and idempotent."""

from django.utils import timezone

from governance.actions.expire_bypass import ExpireBypass
from governance.audit.checkpoints import CheckpointsOff, write_due_checkpoint
from governance.choices import BYPASS_ACTIVE
from governance.models import Bypass


def expire_bypasses():
    """Periodic (the `sherlock-bypass-expiry` schedule, migration 0003): mark every requested
    or approved bypass past its expiry `expired`, so the API and the admin stop showing it as
    usable. Each one is expired by `ExpireBypass` (compare-and-set, audited with the system as
    actor), so a tick that overlaps a verb touching the same bypass expires it once. Returns how
    many this tick expired."""
    due = Bypass.objects.filter(state__in=BYPASS_ACTIVE, expires_at__lte=timezone.now())
    return sum(ExpireBypass(bypass=bypass).execute() for bypass in due.only("pk").order_by("pk"))


def write_audit_checkpoint():
    """Periodic (the `sherlock-audit-checkpoint` schedule, migration 0006): sign the audit
    chain's head into the checkpoint file and webhooks when it moved and the last checkpoint is
    `SHERLOCK_AUDIT_CHECKPOINT_MINUTES` old (`governance.audit.checkpoints`). Without
    `SHERLOCK_AUDIT_KEY` checkpoints are off and the tick does nothing; with no destination it
    fails, so the task's failure shows in django-q2's admin. Returns the checkpoint's sequence,
    or None when none was due."""

    try:
        written = write_due_checkpoint()
    except CheckpointsOff:
        return None
    return written.checkpoint["seq"] if written.checkpoint else None
