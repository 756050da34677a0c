"""The fields of an online rule as its two verbs read them: validated once, every error at
once on its field (`InvalidFields`), and the snapshot the audit entry records.

Who may pick which dataset's checks (`library_version`): a Builder or an Admin of the agent
writes the rule, and may name only a frozen version of a dataset they may see (a role on it, or
a global one). A version they may not see is refused exactly as one that does not exist (400 on
`library_version`, the same message and code), so the answer does not say it exists; the
attempt is recorded as `production.online_rule.refused` (code `not_found`) all the same, like
every object named that its caller may not see (`sherlock.core.hidden`). Keeping the version the
rule already has is not picking it: an Admin may have set one the Builder does not see, and
changing the rule's other fields keeps it."""

from decimal import Decimal, InvalidOperation

from django.conf import settings

from agents.verifiers.spec import validate_verifier_spec
from evaluations.models import DatasetVersion
from production.online.rules import RuleError, validate_checks, validate_filters
from sherlock.core.errors import ActionDenied, ActionInvalid, InvalidFields, refusal_in
from sherlock.core.permissions import user_can

FIELDS = (
    "active",
    "sampling_rate",
    "filters",
    "library_version",
    "library_labels",
    "checks",
    "quality_check",
    "outcome_check",
    "verify_effects",
    "completion_tool",
    "judge_model",
    "daily_cap_usd",
)
MAX_CAP_USD = Decimal("100000")


def check_may_write(user, agent):
    """A Builder or an Admin of the agent writes its online rule."""
    if not user_can(user, "build", agent):
        raise ActionDenied(
            "You may not change the online rule of this agent (Builder or Admin role needed)."
        )


def apply(rule, changes, user):
    """Set `changes` (field -> value, names of `FIELDS`) on `rule`, validated for `user` (the
    dataset versions they may see): raises `InvalidFields` naming every bad field, and leaves
    nothing half-set that is saved."""
    unknown = set(changes) - set(FIELDS)
    errors = [
        ActionInvalid(f"{name} is not a field of an online rule", field=name)
        for name in sorted(unknown)
    ]
    current = rule.library_version_id
    for name in FIELDS:
        if name not in changes:
            continue
        try:
            setattr(rule, name, _clean(name, changes[name], user, current))
        except ActionInvalid as exc:
            errors.append(exc)
    if not errors:
        errors.extend(_cross_checks(rule))
    if errors:
        invalid = InvalidFields(errors)
        # A hidden version is answered as missing, and audited as the refusal it is.
        invalid.refusal = next((e.refusal for e in errors if getattr(e, "refusal", None)), None)
        raise invalid
    if not rule.judge_model:
        rule.judge_model = settings.SHERLOCK_JUDGE_MODEL


def field_errors(changes, user, rule=None):
    """The errors of each field of `changes` taken alone (for `user`, on `rule` when it exists),
    no check across fields: what a form whose other fields do not parse yet still says, so that
    one submit shows every error."""
    errors = []
    current = rule.library_version_id if rule is not None else None
    for name in FIELDS:
        if name in changes:
            try:
                _clean(name, changes[name], user, current)
            except ActionInvalid as exc:
                errors.append(exc)
    return errors


def partial_errors(action, agent, changes, rule=None):
    """`field_errors` for a submit that `action` (the create or update verb it would run) cannot
    take yet, its other fields not parsing: the writer's right first, then each field alone,
    each refusal among them (a hidden dataset version) audited by `action` as it would audit
    its own, so that a malformed submit is no way round the record."""
    try:
        check_may_write(action.acting_user, agent)
    except ActionDenied as denied:
        action.audit_refusal(denied)
        raise
    errors = field_errors(changes, action.acting_user, rule)
    for error in errors:
        held = refusal_in(error)
        if held is not None:
            action.audit_refusal(held)
    return errors


def _clean(name, value, user, current_version_id):  # noqa: C901
    try:
        if name in ("active", "verify_effects"):
            if not isinstance(value, bool):
                raise ActionInvalid("must be true or false", field=name)
            return value
        if name == "sampling_rate":
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                raise ActionInvalid("must be a number from 0 to 1", field=name)
            return float(value)
        if name == "filters":
            return validate_filters(value)
        if name == "checks":
            return validate_checks(value)
        if name == "library_labels":
            if value in (None, ""):
                return []
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ActionInvalid("must be a list of check labels", field=name)
            return sorted(set(value))
        if name == "library_version":
            return _library_version(value, user, current_version_id)
        if name == "quality_check":
            if not isinstance(value, str) or len(value) > 100:
                raise ActionInvalid("must be a check label", field=name)
            return value.strip()
        if name == "completion_tool":
            if value is None:
                return ""
            if not isinstance(value, str) or len(value) > 200:
                raise ActionInvalid("must be a tool name of at most 200 characters", field=name)
            return value.strip()
        if name == "judge_model":
            if not isinstance(value, str) or len(value) > 200:
                raise ActionInvalid("must be a model name of at most 200 characters", field=name)
            return value.strip()
        if name == "outcome_check":
            if value in (None, "", {}):
                return {}
            try:
                validate_verifier_spec(value)
            except ValueError as exc:
                raise ActionInvalid(f"outcome verifier: {exc}", field=name) from None
            return value
        if name == "daily_cap_usd":
            if isinstance(value, bool):
                raise ActionInvalid("must be an amount in USD", field=name)
            try:
                amount = Decimal(str(value))
            except InvalidOperation:
                raise ActionInvalid("must be an amount in USD", field=name) from None
            if not amount.is_finite() or amount < 0 or amount > MAX_CAP_USD:
                raise ActionInvalid(f"must be from 0 to {MAX_CAP_USD} USD", field=name)
            return amount.quantize(Decimal("0.0001"))
    except RuleError as exc:
        raise ActionInvalid(str(exc), field=exc.field) from None
    raise ActionInvalid(f"{name} is not a field of an online rule", field=name)


def _library_version(value, user, current_id):
    if value in (None, ""):
        return None
    if isinstance(value, DatasetVersion):
        version = value
    else:
        if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).isdigit():
            raise ActionInvalid(
                "must be the id of a frozen dataset version", field="library_version"
            )
        found = DatasetVersion.objects.filter(pk=int(value)).select_related("dataset").first()
        if found is None:
            raise _not_found()
        version = found
    if version.pk != current_id and not user_can(user, "view", version.dataset):
        hidden = _not_found()
        hidden.refusal = ActionDenied(
            f"dataset version {version.pk} ({version}) is not visible to the user: answered "
            "as not found",
            code="not_found",
            field="library_version",
        )
        raise hidden
    if version.frozen_at is None:
        raise ActionInvalid(
            "must be a frozen dataset version: a draft's checks may still change",
            field="library_version",
        )
    return version


def _not_found():
    """What a missing version and a hidden one both answer: nothing tells them apart."""
    return ActionInvalid(
        "no such dataset version, or one you may not see",
        code="does_not_exist",
        field="library_version",
    )


def _cross_checks(rule):
    errors = []
    library = []
    if rule.library_version is not None:
        library = list(rule.library_version.checks.values_list("label", flat=True))
        missing = sorted(set(rule.library_labels or ()) - set(library))
        if missing:
            errors.append(
                ActionInvalid(
                    f"not checks of that dataset version: {', '.join(missing)}",
                    field="library_labels",
                )
            )
    elif rule.library_labels:
        errors.append(ActionInvalid("names checks but no library version", field="library_labels"))
    chosen = set(rule.library_labels or library)
    own = {check["label"] for check in rule.checks or []}
    clash = sorted(chosen & own)
    if clash:
        errors.append(
            ActionInvalid(
                f"labels also used by the library's checks: {', '.join(clash)}", field="checks"
            )
        )
    if rule.quality_check and rule.quality_check not in chosen | own:
        errors.append(ActionInvalid("must name one of the rule's checks", field="quality_check"))
    return errors


def snapshot(rule):
    """The rule as the audit log records it."""
    return {
        "agent": rule.agent_id,
        "active": rule.active,
        "sampling_rate": rule.sampling_rate,
        "filters": rule.filters,
        "library_version": rule.library_version_id,
        "library_labels": rule.library_labels,
        "checks": rule.checks,
        "quality_check": rule.quality_check,
        "outcome_check": rule.outcome_check,
        "verify_effects": rule.verify_effects,
        "completion_tool": rule.completion_tool,
        "judge_model": rule.judge_model,
        "daily_cap_usd": str(rule.daily_cap_usd),
    }
