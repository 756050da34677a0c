"""`manage.py verify_audit [--checkpoints FILE]`: re-compute the audit hash chain and name the
first broken entry, then hold the log to the signed checkpoints (governance.audit_checkpoints),
which is what sees a removed tail or a re-computed chain."""

from django.conf import settings
from django.core.management.base import BaseCommand

from governance.audit_checkpoints import CheckpointsOff, verify_checkpoints
from governance.models import verify_chain

# Problems printed one per line; the rest are counted (after a cut tail every later checkpoint
# fails the same way).
SHOWN = 20


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
        code = self._checkpoints(options["checkpoints"] or settings.SHERLOCK_AUDIT_CHECKPOINT_FILE)
        code = max(code, 0 if broken is None else 1)
        if code:
            raise SystemExit(code)

    def _checkpoints(self, path):
        """Verify the checkpoints in `path`; returns the exit code they call for."""
        if path is None:
            # Nothing to verify against: said out loud, since the chain alone cannot see a cut
            # tail or a re-computed chain.
            state = (
                "no checkpoint file given (--checkpoints FILE)"
                if settings.SHERLOCK_AUDIT_KEY
                else "checkpoints off (SHERLOCK_AUDIT_KEY is not set)"
            )
            self.stdout.write(f"{state}: a removed tail or a re-computed chain would not be seen")
            return 0
        try:
            with open(path, encoding="utf-8", errors="replace") as lines:
                report = verify_checkpoints(lines)
        except CheckpointsOff as exc:
            self.stderr.write(f"checkpoints in {path} not verified: {exc}")
            return 2
        except OSError as exc:
            self.stderr.write(f"checkpoints not verified: cannot read {path}: {exc.strerror}")
            return 2
        if not report.ok:
            for line, why in report.problems[:SHOWN]:
                where = f"{path}:{line}" if line else str(path)
                self.stderr.write(f"checkpoint failed: {where}: {why}")
            if report.problem_count > SHOWN:
                self.stderr.write(f"... and {report.problem_count - SHOWN} more failed checkpoints")
            self.stderr.write(
                f"checkpoints failed: {report.problem_count} problem(s) in the {report.lines} "
                f"lines of {path}"
            )
            return 1
        tail = (
            f"; {report.unanchored} entries after it are not anchored yet"
            if report.unanchored
            else ""
        )
        last = f", the last signs #{report.last_seq} ({report.last_at})" if report.last_seq else ""
        self.stdout.write(f"checkpoints verified: {report.valid} in {path}{last}{tail}")
        return 0
