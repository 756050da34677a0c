"""CreateCase, UpdateCase, RemoveCase: an Editor changes the cases of a draft dataset version.

A case's identity (`Case.key`) is stable across versions; its content lives in a
`CaseVersion` per dataset version. Frozen versions are immutable (ActionConflict). Content is
validated before anything is written: overrides change scoring, and an outcome verifier runs
with Sherlock's privileges (`evaluations.evidence.validate_verifier_spec`).
"""

from django.core.exceptions import ValidationError
from django.db import transaction

from agents.verifiers.spec import InvalidVerifier, validate_verifier_spec
from evaluations.choices import CheckMode
from evaluations.models import Case, CaseVersion, DatasetVersion
from sherlock.core.actions import Action
from sherlock.core.audit import audit
from sherlock.core.errors import ActionConflict, ActionDenied, ActionInvalid
from sherlock.core.permissions import user_can

CONTENT_FIELDS = (
    "input",
    "expected",
    "contexts",
    "expected_tools",
    "outcome_check",
    "tags",
    "overrides",
)

_TYPES = {
    "expected": dict,
    "contexts": list,
    "expected_tools": list,
    "outcome_check": dict,
    "tags": list,
    "overrides": dict,
}


def snapshot(case_version):
    return {name: getattr(case_version, name) for name in CONTENT_FIELDS}


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
        if name not in CONTENT_FIELDS:
            raise ActionInvalid(f"unknown field {name}", field=name)
        kind = _TYPES.get(name)
        if kind and not isinstance(value, kind):
            raise ActionInvalid(f"{name}: must be a JSON {kind.__name__}", field=name)
    for i, tool in enumerate(fields.get("expected_tools") or []):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise ActionInvalid(
                f"expected_tools[{i}]: needs a tool name", field=f"expected_tools[{i}]"
            )
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


class _CaseAction(Action):
    """What the three case verbs share: the Editor role, and a draft version.

    `execute()` locks the version row before checking it, so the check reads the committed
    `frozen_at`, not the caller's copy: `FreezeDatasetVersion` updates that row, so a freeze and
    a case edit are serialized, and an edit that lost the race is refused (ActionConflict)
    instead of changing a frozen version."""

    dataset_version = None

    def execute(self):
        with transaction.atomic():
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


class CreateCase(_CaseAction):
    """Add a case (new, or an existing key not yet in this version) to a draft version."""

    def __init__(self, *, acting_user, dataset_version, key, **content):
        super().__init__(acting_user=acting_user)
        self.dataset_version = dataset_version
        self.key = key
        self.content = content

    def perform(self):
        validate_key(self.key)
        validate_content(self.content, list(self.dataset_version.checks.all()))
        case, _ = Case.objects.get_or_create(dataset=self.dataset_version.dataset, key=self.key)
        if CaseVersion.objects.filter(dataset_version=self.dataset_version, case=case).exists():
            raise ActionInvalid(f"key: case {self.key!r} is already in this version", field="key")
        case_version = CaseVersion.objects.create(
            dataset_version=self.dataset_version, case=case, **self.content
        )
        audit(
            "evaluations.case.create",
            actor=self.acting_user,
            target=case_version,
            after={"key": self.key, **snapshot(case_version)},
        )
        return case_version


class UpdateCase(_CaseAction):
    """Change a case's content in a draft version (only the fields given)."""

    def __init__(self, *, acting_user, case_version, **changes):
        super().__init__(acting_user=acting_user)
        self.case_version = case_version
        self.dataset_version = case_version.dataset_version
        self.changes = changes

    def perform(self):
        validate_content(self.changes, list(self.dataset_version.checks.all()))
        case_version = CaseVersion.objects.select_for_update().get(pk=self.case_version.pk)
        before = snapshot(case_version)
        for name, value in self.changes.items():
            setattr(case_version, name, value)
        case_version.save(update_fields=list(self.changes) or None)
        audit(
            "evaluations.case.update",
            actor=self.acting_user,
            target=case_version,
            before=before,
            after=snapshot(case_version),
        )
        return case_version


class RemoveCase(_CaseAction):
    """Remove a case from a draft version (earlier frozen versions keep it)."""

    def __init__(self, *, acting_user, case_version):
        super().__init__(acting_user=acting_user)
        self.case_version = case_version
        self.dataset_version = case_version.dataset_version

    def perform(self):
        audit(
            "evaluations.case.remove",
            actor=self.acting_user,
            target=self.case_version,
            before=snapshot(self.case_version),
        )
        self.case_version.delete()
