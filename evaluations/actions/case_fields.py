"""What the three case verbs (`create_case`, `update_case`, `remove_case`) share: the case's
content fields, their validation, the audit snapshot and the base verb.

A case's identity (`Case.key`) is stable across versions; its content lives in a
`CaseVersion` per dataset version. Frozen versions are immutable (ActionConflict). Content is
validated before anything is written: overrides change scoring, and an outcome verifier runs
with Sherlock's privileges (`agents.verifiers.spec.validate_verifier_spec`). The rules are
written once, here: `key_errors` and `content_errors` list every error of a case (the verbs
refuse them all at once, `InvalidFields`; the import names each with its line; the admin's
case form shows each on its field before it saves).
"""

from typing import Any

from django.core.exceptions import ValidationError

from agents.verifiers.spec import InvalidVerifier, VerifierRefused, validate_verifier_spec
from evaluations.checks import ParamsError, validate_params
from evaluations.choices import CheckMode
from evaluations.models import Case, CaseVersion, DatasetVersion
from sherlock.core.actions import Action
from sherlock.core.errors import (
    ActionConflict,
    ActionDenied,
    ActionInvalid,
    ActionRefused,
    raise_invalid,
)
from sherlock.core.json_values import json_type
from sherlock.core.limits import CASE_FIELD_MAX_BYTES, PARAMS_MAX_BYTES, check_document, excerpt
from sherlock.core.permissions import user_can
from sherlock.core.transcripts import read_expected_calls

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
ELEMENT_MAX_ERRORS = 5  # wrong elements of one list field named one by one (docs/cases.md)
# The keys of a case's `expected` (docs/checks.md, "The case"; `assertions`: the promptfoo
# import's, kept for reference).
EXPECTED_KEYS = frozenset({"output", "table", "chart", "trajectory", "assertions"})


def snapshot(case_version):
    return {name: getattr(case_version, name) for name in CASE_FIELDS}


def key_errors(key, dataset_version=None):
    """What is wrong with `key` as `Case.key` will store it (slug, at most 200 characters),
    checked before `get_or_create`: PostgreSQL answers a longer key with a DataError, not a
    validation error. With `dataset_version`, a key already in it is wrong too. A list of
    ActionInvalid naming `key`, empty when the key is good."""
    if key is None:
        return [ActionInvalid("key: needed (the case's stable id)", field="key")]
    if not isinstance(key, str):
        return [ActionInvalid("key: must be a string", field="key")]
    try:
        Case._meta.get_field("key").clean(key, None)
    except ValidationError as exc:
        return [ActionInvalid(f"key: {message}", field="key") for message in exc.messages]
    if (
        dataset_version is not None
        and CaseVersion.objects.filter(dataset_version=dataset_version, case__key=key).exists()
    ):
        return [ActionInvalid(f"key: case {key!r} is already in this version", field="key")]
    return []


def validate_key(key, dataset_version=None):
    """`key_errors`, all of them refused at once (ActionInvalid, or InvalidFields)."""
    raise_invalid(key_errors(key, dataset_version))


def content_errors(fields, checks):  # noqa: C901
    """Every error of a case's content, each an ActionInvalid naming its field (empty: the
    content is good): its shape, an outcome verifier within the operator's allowlists, and
    overrides that name existing checks with a valid threshold, mode, `disabled` flag and
    params (merged over the check's, as scoring merges them). A wrong override is refused, not
    read leniently: `"disabled": "no"` would disable the check, `"mode": "bogus"` would make
    it non-blocking (scoring.effective_check). `checks` None: the version is not known (a form
    whose version did not validate), so the overrides' labels and params are not checked.

    Every error is found, not only the first, so a person fixes a case in one go; a field of
    the wrong type or size is not read further."""
    errors = []

    def refuse(message, field):
        errors.append(ActionInvalid(message, field=field))

    good = {}  # the fields of the right type and size: the ones read further
    for name, value in fields.items():
        if name not in CASE_FIELDS:
            refuse(f"unknown field {excerpt(name)}", str(name)[:100])
            continue
        kind = _CASE_TYPES[name]
        if value is None and name == "input":
            # Any JSON value but null, in every verb (the import, the admin, the API): a case
            # with no input has "", the field's default.
            refuse('input: must not be null (give "" for none)', "input")
            continue
        if kind and not isinstance(value, kind):
            refuse(f"{name}: must be a JSON {kind.__name__}", name)
            continue
        maximum = PARAMS_MAX_BYTES if name == "overrides" else CASE_FIELD_MAX_BYTES
        try:
            check_document(name, value, maximum)
        except ActionInvalid as exc:
            errors.append(exc)
            continue
        good[name] = value
    # The element types of docs/checks.md's case format (docs/cases.md): a tag or a reference
    # context is text, and so is the reference answer; `[1, {"a": 2}]` would be saved as
    # tags and break every page and check that reads them as text.
    # At most ELEMENT_MAX_ERRORS elements of a field are named, the others counted: a list of
    # 100,000 numbers is one field at fault, not 100,000 errors.
    for name in ("tags", "contexts"):
        wrong = [i for i, item in enumerate(good.get(name) or []) if not isinstance(item, str)]
        for i in wrong[:ELEMENT_MAX_ERRORS]:
            got = json_type(good[name][i])
            refuse(f"{name}[{i}]: must be a string (got {got})", f"{name}[{i}]")
        if len(wrong) > ELEMENT_MAX_ERRORS:
            refuse(f"{name}: and {len(wrong) - ELEMENT_MAX_ERRORS} more that are not strings", name)
    expected = good.get("expected") or {}
    # What a check reads of `expected` (docs/checks.md, "The case"), and the promptfoo import's
    # kept assertions: any other key is a typo no check would ever read ("outptu").
    for key in [key for key in expected if key not in EXPECTED_KEYS][:ELEMENT_MAX_ERRORS]:
        known = ", ".join(sorted(EXPECTED_KEYS))
        refuse(f"expected.{str(key)[:60]}: not a key of expected (one of {known})", "expected")
    if "output" in expected and not isinstance(expected["output"], str):
        got = json_type(expected["output"])
        refuse(f"expected.output: must be a string (got {got})", "expected.output")
    # A tool is a plain name ("kb.search") or a call ({"name", "arguments"}), read as
    # tools_used reads it (sherlock.core.transcripts.read_expected_calls).
    bad_tools = 0
    for i, tool in enumerate(good.get("expected_tools") or []):
        try:
            read_expected_calls([tool], "expected_tools")
        except ValueError:
            bad_tools += 1
            if bad_tools <= ELEMENT_MAX_ERRORS:
                refuse(
                    f"expected_tools[{i}]: needs a tool name (a string, or an object with a name)",
                    f"expected_tools[{i}]",
                )
    if bad_tools > ELEMENT_MAX_ERRORS:
        more = bad_tools - ELEMENT_MAX_ERRORS
        refuse(f"expected_tools: and {more} more without a tool name", "expected_tools")
    if good.get("outcome_check"):
        try:
            validate_verifier_spec(good["outcome_check"])
        except InvalidVerifier as exc:
            # A refusal of the operator's egress rules is audited by the verb (ActionRefused).
            error = ActionRefused if isinstance(exc, VerifierRefused) else ActionInvalid
            errors.append(error(f"outcome_check.{exc}", field=f"outcome_check.{exc.field}"))
    by_label = None if checks is None else {c.label: c for c in checks}
    for label, override in (good.get("overrides") or {}).items():
        errors += _override_errors(f"overrides.{label}", label, override, by_label)
    return errors


def _override_errors(where, label, override, by_label):

    errors = []

    def refuse(message, field=where):
        errors.append(ActionInvalid(message, field=field))

    if by_label is not None and label not in by_label:
        refuse(f"{where}: no check with this label")
    if not isinstance(override, dict):
        refuse(f"{where}: must be an object")
        return errors
    for extra in sorted(set(override) - {"threshold", "params", "mode", "disabled"}):
        refuse(f"{where}: unknown key {excerpt(extra)}")
    threshold = override.get("threshold")
    if threshold is not None and not (
        isinstance(threshold, int | float)
        and not isinstance(threshold, bool)
        and 0 <= threshold <= 1
    ):
        refuse(f"{where}.threshold: must be in [0, 1]", f"{where}.threshold")
    if "mode" in override and override["mode"] not in CheckMode.values:
        modes = ", ".join(CheckMode.values)
        refuse(f"{where}.mode: must be one of {modes}", f"{where}.mode")
    if "disabled" in override and not isinstance(override["disabled"], bool):
        refuse(f"{where}.disabled: must be true or false", f"{where}.disabled")
    if "params" in override:
        if not isinstance(override["params"], dict):
            refuse(f"{where}.params: must be an object", f"{where}.params")
        elif by_label is not None and label in by_label:
            check = by_label[label]
            try:
                validate_params(check.kind, {**check.params, **override["params"]})
            except ParamsError as exc:
                refuse(f"{where}.params.{exc.field}: {exc.message}", f"{where}.params")
    return errors


def validate_content(fields, checks):
    """`content_errors`, all of them refused at once (ActionInvalid, or InvalidFields)."""
    raise_invalid(content_errors(fields, checks))


class CaseVerb(Action):
    """What the three case verbs share: the Editor role, and a draft version.

    `execute()` locks the version row before checking it, so the check reads the committed
    `frozen_at`, not the caller's copy: `FreezeDatasetVersion` updates that row, so a freeze and
    a case edit are serialized, and an edit that lost the race is refused (ActionConflict)
    instead of changing a frozen version."""

    dataset_version: Any = None  # the version the verb edits, set by each subclass

    def lock(self):
        self.dataset_version = DatasetVersion.objects.select_for_update().get(
            pk=self.dataset_version.pk
        )

    def check(self):
        if not user_can(self.acting_user, "edit", self.dataset_version.dataset):
            raise ActionDenied("You may not edit cases of this dataset (Editor role needed).")
        if self.dataset_version.is_frozen:
            raise ActionConflict(
                "This dataset version is frozen; edit the draft version instead.",
                code="version_frozen",
            )
