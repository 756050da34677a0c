"""UpdateCheck: an Editor changes a check of a draft dataset version."""

from evaluations.actions.check_fields import (
    CHECK_FIELDS,
    CheckVerb,
    refuse_unknown,
    snapshot,
    validate_check,
)
from evaluations.models import Check


class UpdateCheck(CheckVerb):
    """Change a check of a draft dataset version (only the fields given)."""

    noun = "check"
    verb = "update"

    def __init__(self, *, acting_user, check, **changes):
        super().__init__(acting_user=acting_user)
        self.check_obj = check
        self.dataset_version = check.dataset_version
        refuse_unknown(changes)
        self.changes = changes

    def perform(self):
        check = Check.objects.select_for_update().get(pk=self.check_obj.pk)
        before = snapshot(check)
        for name, value in self.changes.items():
            setattr(check, name, value)
        validate_check(check)
        check.save(update_fields=list(CHECK_FIELDS))
        self.audit(
            target=check,
            before=before,
            after=snapshot(check),
        )
        return check
