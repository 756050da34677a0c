"""What the three check verbs (`create_check`, `update_check`, `delete_check`) share: the
check's fields, their validation, the audit snapshot and the base verb.

Params are validated against the kind's schema before anything is written (ActionInvalid names
the field, e.g. `params.schema`), and frozen versions are immutable (ActionConflict).
"""

from typing import Any

from django.core.exceptions import ValidationError

from sherlock.core.actions import Action
from sherlock.core.errors import ActionConflict, ActionDenied, ActionInvalid, raise_invalid
from sherlock.core.limits import PARAMS_MAX_BYTES, check_document
from sherlock.core.permissions import user_can

# Every field of a check the check verbs take: what the audit snapshot records, a new draft
# copies, and the admin and the API edit (`dataset_version` is the row's place, not edited).
CHECK_FIELDS = (
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
    return {name: getattr(check, name) for name in CHECK_FIELDS}


def refuse_unknown(fields):
    """ActionInvalid naming the first field that is not one of `CHECK_FIELDS`."""
    unknown = set(fields) - set(CHECK_FIELDS)
    if unknown:
        raise ActionInvalid(f"unknown field {sorted(unknown)[0]}", field=sorted(unknown)[0])


def validate_check(check):
    """Run the model's validation (params against the kind's schema, label uniqueness,
    threshold in [0, 1]) and refuse with every error at once, an ActionInvalid
    naming its field each. Params are bounded first (`limits.PARAMS_MAX_BYTES`): the kind's
    schema is checked by recursive code."""
    check_document("params", check.params, PARAMS_MAX_BYTES)
    try:
        check.full_clean()
    except ValidationError as exc:
        errors = exc.message_dict if hasattr(exc, "error_dict") else {"__all__": exc.messages}
        refusals = []
        for field, messages in errors.items():
            if field == "__all__" and any("label" in m.lower() for m in messages):
                field = "label"
            refusals.append(ActionInvalid(f"{field}: {messages[0]}", field=field))
        raise_invalid(refusals)


class CheckVerb(Action):
    """What the three check verbs share: the Editor role, and a draft version."""

    dataset_version: Any = None  # the version the verb edits, set by each subclass

    def check(self):
        if not user_can(self.acting_user, "edit", self.dataset_version.dataset):
            raise ActionDenied("You may not edit checks of this dataset (Editor role needed).")
        if self.dataset_version.is_frozen:
            raise ActionConflict(
                "This dataset version is frozen; edit the draft version instead.",
                code="version_frozen",
            )
