"""CreateCheck, UpdateCheck, DeleteCheck: an Editor changes the checks of a draft dataset version.

Params are validated against the kind's schema before anything is written (ActionInvalid names
the field, e.g. `params.schema`), and frozen versions are immutable (ActionConflict).
"""

from django.core.exceptions import ValidationError

from evaluations.models import Check
from sherlock.core.actions import Action
from sherlock.core.audit import audit
from sherlock.core.errors import ActionConflict, ActionDenied, ActionInvalid
from sherlock.core.permissions import user_can

EDITABLE_FIELDS = (
    "label",
    "kind",
    "params",
    "threshold",
    "mode",
    "judge_model",
    "requires_calibration",
    "quality_grader",
    "min_labels",
    "kappa_floor",
    "position",
)


def snapshot(check):
    return {name: getattr(check, name) for name in EDITABLE_FIELDS}


def validate_check(check):
    """Run the model's validation (params against the kind's schema, label uniqueness,
    threshold in [0, 1]) and turn the first error into an ActionInvalid naming its field."""
    try:
        check.full_clean()
    except ValidationError as exc:
        errors = exc.message_dict if hasattr(exc, "error_dict") else {"__all__": exc.messages}
        field, messages = next(iter(errors.items()))
        if field == "__all__" and any("label" in m.lower() for m in messages):
            field = "label"
        raise ActionInvalid(f"{field}: {messages[0]}", field=field) from None


class _CheckAction(Action):
    dataset_version = None

    def check(self):
        if not user_can(self.acting_user, "edit", self.dataset_version.dataset):
            raise ActionDenied("You may not edit checks of this dataset (Editor role needed).")
        if self.dataset_version.is_frozen:
            raise ActionConflict(
                "This dataset version is frozen; edit the draft version instead.",
                code="version_frozen",
            )


class CreateCheck(_CheckAction):
    """Add a check to a draft dataset version."""

    def __init__(self, *, acting_user, dataset_version, **fields):
        super().__init__(acting_user=acting_user)
        self.dataset_version = dataset_version
        unknown = set(fields) - set(EDITABLE_FIELDS)
        if unknown:
            raise ActionInvalid(f"unknown field {sorted(unknown)[0]}", field=sorted(unknown)[0])
        self.fields = fields

    def perform(self):
        check = Check(dataset_version=self.dataset_version, **self.fields)
        validate_check(check)
        check.save()
        audit(
            "evaluations.check.create", actor=self.acting_user, target=check, after=snapshot(check)
        )
        return check


class UpdateCheck(_CheckAction):
    """Change a check of a draft dataset version (only the fields given)."""

    def __init__(self, *, acting_user, check, **changes):
        super().__init__(acting_user=acting_user)
        self.check_obj = check
        self.dataset_version = check.dataset_version
        unknown = set(changes) - set(EDITABLE_FIELDS)
        if unknown:
            raise ActionInvalid(f"unknown field {sorted(unknown)[0]}", field=sorted(unknown)[0])
        self.changes = changes

    def perform(self):
        check = Check.objects.select_for_update().get(pk=self.check_obj.pk)
        before = snapshot(check)
        for name, value in self.changes.items():
            setattr(check, name, value)
        validate_check(check)
        check.save(update_fields=list(EDITABLE_FIELDS))
        audit(
            "evaluations.check.update",
            actor=self.acting_user,
            target=check,
            before=before,
            after=snapshot(check),
        )
        return check


class DeleteCheck(_CheckAction):
    """Remove a check from a draft dataset version."""

    def __init__(self, *, acting_user, check):
        super().__init__(acting_user=acting_user)
        self.check_obj = check
        self.dataset_version = check.dataset_version

    def perform(self):
        before = snapshot(self.check_obj)
        audit(
            "evaluations.check.delete", actor=self.acting_user, target=self.check_obj, before=before
        )
        self.check_obj.delete()
