"""`manage.py verify_audit [--checkpoints FILE]`: re-compute the audit hash chain and name the
first broken entry, then hold the log to the signed checkpoints (governance.audit.checkpoints),
which is what sees a removed tail or a re-computed chain."""

from django.core.management.base import BaseCommand

from governance.audit.checkpoints import verify_file
from governance.models import verify_chain


class Command(BaseCommand):
    help = (
        "Verify the audit log's hash chain and, with --checkpoints FILE (default "
        "SHERLOCK_AUDIT_CHECKPOINT_FILE), its signed checkpoints. Exit 0 when both hold, 1 on "
        "tampering (the broken entry, each failed checkpoint and why), 2 when the checkpoints "
        "cannot be verified (no key, unreadable file)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--checkpoints",
            metavar="FILE",
            help="a checkpoint file (JSON Lines, as audit_checkpoint writes or a webhook "
            "receiver keeps); default SHERLOCK_AUDIT_CHECKPOINT_FILE",
        )

    def handle(self, *args, **options):
        checked, broken, why = verify_chain()
        if broken is None:
            self.stdout.write(f"audit chain intact: {checked} entries checked")
        else:
            self.stderr.write(
                f"audit chain broken at sequence {broken}: {why} "
                f"({checked} entries verified before it)"
            )
        outcome = verify_file(options["checkpoints"])
        for problem in outcome.problems:
            self.stderr.write(f"checkpoint failed: {problem}")
        (self.stderr if outcome.code else self.stdout).write(outcome.summary)
        code = max(outcome.code, 0 if broken is None else 1)
        if code:
            raise SystemExit(code)
