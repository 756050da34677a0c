"""Export audit entries: the one verb behind the admin's export, the audit page's and
`manage.py export_audit`. Reading the whole trail out is itself worth a line in it: the entry
names who exported, the format, how many entries and the filters applied."""

from governance.actions.base import GovernanceAction
from governance.audit.export import FORMATS, write_entries
from sherlock.core.errors import ActionDenied, ActionInvalid


class ExportAudit(GovernanceAction):
    noun = "audit"
    verb = "export"

    def __init__(self, *, acting_user, entries, fmt, out, filters=None, reason):
        """`entries` (a queryset, written oldest first) in `fmt` to the text stream `out`;
        `acting_user` None is the operator at the command line. `reason` says where from."""
        super().__init__(acting_user=acting_user)
        self.entries, self.fmt, self.out = entries, fmt, out
        self.filters, self.reason = filters or {}, reason

    def check_role(self):
        user = self.acting_user
        if user is not None and not user.has_perm("governance.view_auditentry"):
            raise ActionDenied("Only an Admin may export the audit log.", code="role")

    def check(self):
        self.check_role()
        if self.fmt not in FORMATS:
            raise ActionInvalid(f"No export format {self.fmt!r}.", field="format")

    def perform(self):
        count = write_entries(self.entries.order_by("sequence"), self.fmt, self.out)
        self.audit(
            after={"format": self.fmt, "entries": count, "filters": self.filters},
            reason=self.reason,
        )
        return count
