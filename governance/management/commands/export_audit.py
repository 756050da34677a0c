"""`manage.py export_audit --format csv|jsonl`: the audit log, oldest first, for review."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from governance.actions.export_audit import ExportAudit
from governance.audit.export import FORMATS
from governance.models import AuditEntry
from sherlock.core.api.filters import UTCDateTimeField


class Command(BaseCommand):
    help = "Export audit entries as CSV or JSON Lines (to stdout, or --output FILE)."

    def add_arguments(self, parser):
        parser.add_argument("--format", choices=sorted(FORMATS), default="jsonl")
        parser.add_argument("--output", help="write to this file instead of stdout")
        parser.add_argument("--actor", help="username of the actor")
        parser.add_argument("--action", help="an action code, or a prefix ending in '.'")
        parser.add_argument("--target-type", help="e.g. agents.agentversion")
        parser.add_argument("--since", help="ISO date-time, inclusive")
        parser.add_argument("--until", help="ISO date-time, inclusive")

    def handle(self, *args, **opts):
        entries = AuditEntry.objects.order_by("sequence")
        if opts["actor"]:
            entries = entries.filter(actor_repr=opts["actor"])
        if opts["action"]:
            action = opts["action"]
            entries = (
                entries.filter(action__startswith=action)
                if action.endswith(".")
                else entries.filter(action=action)
            )
        if opts["target_type"]:
            entries = entries.filter(target_type=opts["target_type"])
        for name, lookup in (("since", "at__gte"), ("until", "at__lte")):
            if opts[name]:
                try:  # the API's reading: any ISO offset, compared in UTC
                    moment = UTCDateTimeField().clean(opts[name])
                except ValidationError as exc:
                    raise CommandError(f"--{name}: {opts[name]!r} is not an ISO date-time") from exc
                entries = entries.filter(**{lookup: moment})

        def export(out):
            return ExportAudit(
                acting_user=None,
                entries=entries,
                fmt=opts["format"],
                out=out,
                filters=_filters(opts),
                reason="manage.py export_audit",
            ).execute()

        if opts["output"]:
            with open(opts["output"], "w", newline="", encoding="utf-8") as out:
                count = export(out)
            self.stderr.write(f"{count} entries written to {opts['output']}")
        else:
            export(self.stdout)


def _filters(opts):
    names = ("actor", "action", "target_type", "since", "until")
    return {name: opts[name] for name in names if opts.get(name)}
