"""What the three case verbs (`create_case`, `update_case`, `remove_case`) share: the case's
content fields, their validation, the audit snapshot and the base verb.

A case's identity (`Case.key`) is stable across versions; its content lives in a
`CaseVersion` per dataset version. Frozen versions are immutable (ActionConflict). Content is
validated before anything is written: overrides change scoring, and an outcome verifier runs
with Sherlock's privileges (`agents.verifiers.spec.validate_verifier_spec`).
"""

from django.core.exceptions import ValidationError
from django.db import transaction

from agents.transcripts import read_expected_calls
from agents.verifiers.spec import InvalidVerifier, validate_verifier_spec
from evaluations.choices import CheckMode
from evaluations.models import Case, DatasetVersion
from sherlock.core.actions import Action
from sherlock.core.errors import ActionConflict, ActionDenied, ActionInvalid
from sherlock.core.limits import CASE_FIELD_MAX_BYTES, PARAMS_MAX_BYTES, check_document, excerpt
from sherlock.core.permissions import user_can

# The content of a case in one dataset version, each field with the JSON type its value must
# have (`input` may be any JSON value): the fields the case verbs take, the audit snapshot
# records, a new draft copies, and the admin and the API edit.
_CASE_TYPES = {
    "input": None,
    "expected": dict,
    "contexts": list,
    "expected_tools": list,
    "outcome_check": dict,
    "tags": list,
    "overrides": dict,
}
CASE_FIELDS = tuple(_CASE_TYPES)


def snapshot(case_version):
    return {name: getattr(case_version, name) for name in CASE_FIELDS}


def validate_key(key):
    """The key as `Case.key` will store it (slug, at most 200 characters), checked before
    `get_or_create`: PostgreSQL answers a longer key with a DataError, not a validation error."""
    if not isinstance(key, str):
        raise ActionInvalid("key: must be a string", field="key")
    try:
        Case._meta.get_field("key").clean(key, None)
    except ValidationError as exc:
        raise ActionInvalid(f"key: {exc.messages[0]}", field="key") from None


def validate_content(fields, checks):
    """Shape of the case content, an outcome verifier within the operator's allowlists, and
    overrides that name existing checks with a valid threshold, mode, `disabled` flag and
    params (merged over the check's, as scoring merges them). A wrong override is refused, not
    read leniently: `"disabled": "no"` would disable the check, `"mode": "bogus"` would make
    it non-blocking (scoring.effective_check)."""
    for name, value in fields.items():
        if name not in CASE_FIELDS:
            raise ActionInvalid(f"unknown field {excerpt(name)}", field=str(name)[:100])
        kind = _CASE_TYPES[name]
        if value is None and name == "input":
            # Any JSON value but null, in every verb (the import, the admin, the API): a case
            # with no input has "", the field's default.
            raise ActionInvalid('input: must not be null (give "" for none)', field="input")
        if kind and not isinstance(value, kind):
            raise ActionInvalid(f"{name}: must be a JSON {kind.__name__}", field=name)
        maximum = PARAMS_MAX_BYTES if name == "overrides" else CASE_FIELD_MAX_BYTES
        check_document(name, value, maximum)
    # A tool is a plain name ("kb.search") or a call ({"name", "arguments"}), read as
    # tools_used reads it (agents.transcripts.read_expected_calls).
    for i, tool in enumerate(fields.get("expected_tools") or []):
        try:
            read_expected_calls([tool], "expected_tools")
        except ValueError:
            raise ActionInvalid(
                f"expected_tools[{i}]: needs a tool name (a string, or an object with a name)",
                field=f"expected_tools[{i}]",
            ) from None
    if fields.get("outcome_check"):
        try:
            validate_verifier_spec(fields["outcome_check"])
        except InvalidVerifier as exc:
            raise ActionInvalid(
                f"outcome_check.{exc}", field=f"outcome_check.{exc.field}"
            ) from None
    from evaluations.checks import ParamsError, validate_params

    by_label = {c.label: c for c in checks}
    for label, override in (fields.get("overrides") or {}).items():
        where = f"overrides.{label}"
        if label not in by_label:
            raise ActionInvalid(f"{where}: no check with this label", field=where)
        if not isinstance(override, dict):
            raise ActionInvalid(f"{where}: must be an object", field=where)
        extra = set(override) - {"threshold", "params", "mode", "disabled"}
        if extra:
            raise ActionInvalid(f"{where}: unknown key {sorted(extra)[0]}", field=where)
        threshold = override.get("threshold")
        if threshold is not None and not (
            isinstance(threshold, int | float)
            and not isinstance(threshold, bool)
            and 0 <= threshold <= 1
        ):
            raise ActionInvalid(f"{where}.threshold: must be in [0, 1]", field=f"{where}.threshold")
        if "mode" in override and override["mode"] not in CheckMode.values:
            modes = ", ".join(CheckMode.values)
            raise ActionInvalid(f"{where}.mode: must be one of {modes}", field=f"{where}.mode")
        if "disabled" in override and not isinstance(override["disabled"], bool):
            raise ActionInvalid(
                f"{where}.disabled: must be true or false", field=f"{where}.disabled"
            )
        if "params" in override:
            if not isinstance(override["params"], dict):
                raise ActionInvalid(f"{where}.params: must be an object", field=f"{where}.params")
            check = by_label[label]
            try:
                validate_params(check.kind, {**check.params, **override["params"]})
            except ParamsError as exc:
                raise ActionInvalid(
                    f"{where}.params.{exc.field}: {exc.message}", field=f"{where}.params"
                ) from None


class CaseVerb(Action):
    """What the three case verbs share: the Editor role, and a draft version.

    `execute()` locks the version row before checking it, so the check reads the committed
    `frozen_at`, not the caller's copy: `FreezeDatasetVersion` updates that row, so a freeze and
    a case edit are serialized, and an edit that lost the race is refused (ActionConflict)
    instead of changing a frozen version."""

    dataset_version = None

    def execute_in_transaction(self):
        with transaction.atomic():
            self.check_limits()
            self.dataset_version = DatasetVersion.objects.select_for_update().get(
                pk=self.dataset_version.pk
            )
            self.check()
            return self.perform()

    def check(self):
        if not user_can(self.acting_user, "edit", self.dataset_version.dataset):
            raise ActionDenied("You may not edit cases of this dataset (Editor role needed).")
        if self.dataset_version.is_frozen:
            raise ActionConflict(
                "This dataset version is frozen; edit the draft version instead.",
                code="version_frozen",
            )
