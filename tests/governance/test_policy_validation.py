"""A publishing policy's rates and floors are fractions and its budget is money: a floor of 7
would block every release and -3 would wave every one through, so out-of-range values are refused
on their field (model validation, the policy actions) and by the database."""

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from governance.actions.create_policy import CreatePolicy
from governance.actions.update_policy import UpdatePolicy
from governance.models import PublishingPolicy
from sherlock.core.errors import ActionInvalid

pytestmark = pytest.mark.django_db  # full_clean checks the constraints with a query

OUT_OF_RANGE = [
    ("min_case_pass_rate", 1.5),
    ("min_case_pass_rate", -0.1),
    ("min_useful_progress", 7),
    ("min_tool_effect_integrity", -3),
    ("min_quality", 42),
    ("max_cost_per_verified_outcome_usd", Decimal("-0.01")),
    ("max_cost_per_verified_outcome_usd", Decimal("100000.0001")),
]


@pytest.mark.parametrize(("field", "value"), OUT_OF_RANGE)
def test_full_clean_refuses_an_out_of_range_value_on_its_field(field, value):
    policy = PublishingPolicy(name="Default", **{field: value})

    with pytest.raises(ValidationError) as refused:
        policy.full_clean(exclude=["scope_key"])

    assert list(refused.value.message_dict) == [field]


def test_the_optional_floors_and_the_budget_may_be_left_unset():
    policy = PublishingPolicy(
        name="Default",
        min_useful_progress=None,
        min_tool_effect_integrity=None,
        min_quality=None,
        max_cost_per_verified_outcome_usd=None,
    )

    policy.full_clean(exclude=["scope_key"])


@pytest.mark.parametrize(("field", "value"), OUT_OF_RANGE)
def test_changing_a_policy_to_an_out_of_range_value_is_refused_naming_the_field(
    admin_user, policy, field, value
):
    with pytest.raises(ActionInvalid) as refused:
        UpdatePolicy(acting_user=admin_user, policy=policy, changes={field: value}).execute()

    assert refused.value.field == field
    assert PublishingPolicy.objects.count() == 1


def test_creating_a_policy_with_a_quality_floor_of_42_is_refused(admin_user, agent):
    with pytest.raises(ActionInvalid) as refused:
        CreatePolicy(acting_user=admin_user, agent=agent, name="Own", min_quality=42).execute()

    assert refused.value.field == "min_quality"
    assert not PublishingPolicy.objects.filter(agent=agent).exists()


@pytest.mark.parametrize(("field", "value"), OUT_OF_RANGE)
def test_the_database_refuses_an_out_of_range_value_from_any_writer(field, value):
    with pytest.raises(IntegrityError), transaction.atomic():
        PublishingPolicy.objects.create(name="Raw", **{field: value})


def test_the_bounds_themselves_are_allowed(admin_user, policy):
    changes = {
        "min_case_pass_rate": 0.0,
        "min_useful_progress": 1.0,
        "min_tool_effect_integrity": 0.0,
        "min_quality": 1.0,
        "max_cost_per_verified_outcome_usd": Decimal("0"),
    }

    new = UpdatePolicy(acting_user=admin_user, policy=policy, changes=changes).execute()

    assert (new.version, new.min_quality, new.max_cost_per_verified_outcome_usd) == (2, 1.0, 0)
