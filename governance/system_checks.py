"""Deployment checks of governance (`manage.py check --deploy`): audit checkpoints off.

Without `SHERLOCK_AUDIT_KEY` the audit chain has no anchor outside the database, so a removed
tail or a re-computed chain goes unseen (docs/governance.md "Audit checkpoints"). That is fine
on a laptop and worth a warning before going live, so it is a deploy check, not a start-up error.
"""

from django.conf import settings
from django.core import checks


@checks.register(checks.Tags.security, deploy=True)
def audit_checkpoints_on(app_configs=None, **kwargs):
    if settings.SHERLOCK_AUDIT_KEY:
        return []
    return [
        checks.Warning(
            "Audit checkpoints are off: SHERLOCK_AUDIT_KEY is not set, so a removed tail or a "
            "re-computed audit chain would not be seen.",
            hint="Set SHERLOCK_AUDIT_KEY and SHERLOCK_AUDIT_CHECKPOINT_FILE (or subscribe a "
            "webhook endpoint to audit.checkpoint).",
            id="sherlock.W001",
        )
    ]
