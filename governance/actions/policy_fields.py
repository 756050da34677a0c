"""What the two policy verbs share: the editable fields, validation and the audit snapshot.

`POLICY_FIELDS` is the one list of a policy's rules: the verbs take them, the audit snapshot
records them, a new policy version copies them and the admin's PolicyForm edits them. The
contract thresholds among them are the contract's own list (`evaluations.contract.THRESHOLD_FIELDS`,
what `policy_thresholds` reads), not a second copy.
"""

from django.core.exceptions import ValidationError

from evaluations.contract import THRESHOLD_FIELDS
from sherlock.core.errors import ActionInvalid, raise_invalid

# Every rule a policy carries; `agent` (the scope) and `version` are not edited, they are the
# row's identity.
POLICY_FIELDS = (
    "name",
    "repetitions",
    "min_case_pass_rate",
    "case_pass_rate_decides_on",
    "case_pass_rate_confidence",
    "max_regression",
    "floors_decide_on",
    "corrected_checks",
    "gate_runs_stop_early",
    "enforcement",
    *THRESHOLD_FIELDS,
    "creator_may_not_publish",
    "bypass_requires_second_admin",
    "bypass_expiry_hours",
    "bypass_approver_min_role_age_hours",
)


def snapshot(policy, gate_datasets):
    return {
        "scope": policy.scope_text,  # a name, never "agent:3"
        "version": policy.version,
        **{name: getattr(policy, name) for name in POLICY_FIELDS},
        "gate_datasets": sorted(d.slug for d in gate_datasets),
    }


def validate(policy, fields):
    """Reject unknown fields and whatever the model's own validation refuses: every problem at
    once, each an ActionInvalid on its field (`raise_invalid`)."""
    unknown = set(fields) - set(POLICY_FIELDS)
    if unknown:
        raise_invalid(
            ActionInvalid(f"{name} is not a policy field", field=name) for name in sorted(unknown)
        )
    errors = []
    try:
        policy.full_clean(exclude=["scope_key", "agent", "created_by"], validate_unique=False)
    except ValidationError as exc:
        errors = [
            ActionInvalid(f"{field}: {' '.join(messages)}", field=field)
            for field, messages in exc.message_dict.items()
        ]
    hours = policy.bypass_expiry_hours
    if (
        isinstance(hours, int)
        and hours < 1
        and not any(e.field == "bypass_expiry_hours" for e in errors)
    ):
        errors.append(
            ActionInvalid("a bypass must live at least one hour", field="bypass_expiry_hours")
        )
    raise_invalid(errors)
