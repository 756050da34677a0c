"""`manage.py verify_audit`: re-compute the audit hash chain and name the first broken entry."""

from django.core.management.base import BaseCommand

from governance.models import verify_chain


class Command(BaseCommand):
    help = "Verify the audit log's hash chain. Exit 0 when intact, 1 at the first broken entry."

    def handle(self, *args, **options):
        checked, broken, why = verify_chain()
        if broken is None:
            self.stdout.write(f"audit chain intact: {checked} entries checked")
            return
        self.stderr.write(
            f"audit chain broken at sequence {broken}: {why} ({checked} entries verified before it)"
        )
        raise SystemExit(1)
