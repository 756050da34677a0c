"""What the two policy verbs share: the editable fields, validation and the audit snapshot."""

from django.core.exceptions import ValidationError

from sherlock.core.errors import ActionInvalid

# Every rule a policy carries; `agent` (the scope) and `version` are not edited, they are the
# row's identity.
POLICY_FIELDS = (
    "name",
    "repetitions",
    "min_case_pass_rate",
    "enforcement",
    "coverage_required",
    "max_false_successes",
    "max_unknown_effects",
    "min_useful_progress",
    "min_tool_effect_integrity",
    "max_cost_per_verified_outcome_usd",
    "min_quality",
    "creator_may_not_publish",
    "bypass_requires_second_admin",
    "bypass_expiry_hours",
)


def snapshot(policy, gate_datasets):
    return {
        "scope": policy.scope_key,
        "version": policy.version,
        **{name: getattr(policy, name) for name in POLICY_FIELDS},
        "gate_datasets": sorted(d.slug for d in gate_datasets),
    }


def validate(policy, fields):
    """Reject unknown fields and whatever the model's own validation refuses (ActionInvalid)."""
    unknown = set(fields) - set(POLICY_FIELDS)
    if unknown:
        name = sorted(unknown)[0]
        raise ActionInvalid(f"{name} is not a policy field", field=name)
    try:
        policy.full_clean(exclude=["scope_key", "agent", "created_by"], validate_unique=False)
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        raise ActionInvalid(f"{field}: {' '.join(messages)}", field=field) from None
    if policy.bypass_expiry_hours < 1:
        raise ActionInvalid("a bypass must live at least one hour", field="bypass_expiry_hours")
