"""`manage.py audit_checkpoint`: sign the audit chain's head now (what the schedule does, without
waiting for the interval)."""

from django.core.management.base import BaseCommand, CommandError

from governance.audit.checkpoints import CheckpointsOff, write_checkpoint


class Command(BaseCommand):
    help = (
        "Append a signed checkpoint of the audit chain's head to SHERLOCK_AUDIT_CHECKPOINT_FILE "
        "and the audit.checkpoint webhooks, unless the head has not moved since the last one."
    )

    def handle(self, *args, **options):
        try:
            written = write_checkpoint()
        except CheckpointsOff as exc:
            raise CommandError(f"checkpoints are off: {exc}") from None
        except (ValueError, OSError) as exc:
            raise CommandError(str(exc)) from None
        if written.checkpoint is None:
            self.stdout.write(f"no checkpoint written: {written.why}")
            return
        checkpoint = written.checkpoint
        places = [str(written.path)] if written.path else []
        if written.endpoints:
            places.append(f"{written.endpoints} webhook endpoint(s) (queued)")
        self.stdout.write(
            f"checkpoint of #{checkpoint['seq']} ({checkpoint['hash'][:12]}...) written to "
            + " and ".join(places)
        )
