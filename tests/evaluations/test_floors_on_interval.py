"""A policy may decide the contract's floors on their Wilson interval, as the case pass rate:
useful progress 27/30 against a floor of 0.85 is insufficient evidence there (it passes on the
point estimate), 10/30 fails, 300/300 passes; with repetitions each case's trials weigh as one.
A floor the interval can never clear (1.0) is refused on the interval, naming the field."""

from decimal import Decimal

import pytest
from django.db import IntegrityError

from evaluations.contract import evaluate
from evaluations.contract.applied import DEFAULT_APPLIED
from evaluations.contract.inputs import DEFAULT_THRESHOLDS
from evaluations.contract.totals import VariantTotals
from evaluations.stats import wilson
from evaluations.verdict.gates import contract_gate
from governance.actions.create_policy import CreatePolicy
from governance.models import PublishingPolicy
from sherlock.core.errors import ActionInvalid

ON_INTERVAL = DEFAULT_APPLIED.__class__(
    DEFAULT_THRESHOLDS.__class__(
        **{**DEFAULT_THRESHOLDS.__dict__, "min_useful_progress": Decimal("0.85")}
    ),
    floors_decide_on="interval",
)


def floors(progress, windows, repetitions=1, applied=ON_INTERVAL):
    totals = VariantTotals(
        variant="v1", runs=windows, windows_with_evidence_delta=progress, active_windows=windows
    )
    limits = applied.thresholds
    return contract_gate(evaluate(totals, limits), "floors", limits, applied, repetitions)


def test_the_floors_on_their_interval_pass_fail_or_want_more_evidence():
    undecided = floors(27, 30)
    assert undecided.state == "insufficient"
    interval = wilson(27, 30)
    assert undecided.value["useful_progress"]["interval"] == [
        round(interval.low, 6),
        round(interval.high, 6),
    ]
    assert "95% interval 0.744–0.965 straddles 0.85" in undecided.detail
    assert undecided.bound["decides_on"] == "interval"
    assert floors(10, 30).state == "fail"
    assert floors(300, 300).state == "pass"
    # The same figures on the point estimate: 27/30 = 0.9 clears 0.85.
    point = DEFAULT_APPLIED.__class__(ON_INTERVAL.thresholds)
    assert floors(27, 30, applied=point).state == "pass"


def test_repetitions_of_a_case_weigh_as_one():
    # 285/300 windows clear 0.85 on 300 independent trials; over 100 cases run three times
    # each, the interval is that of 100.
    assert floors(285, 300).state == "pass"
    weighed = floors(285, 300, repetitions=3)
    assert weighed.value["useful_progress"]["interval"][0] == pytest.approx(
        wilson(95, 100).low, abs=1e-6
    )
    assert "the 3 repetitions of a case weigh as one" in weighed.detail


def test_a_floor_of_one_cannot_be_decided_on_the_interval(db, admin_user):
    with pytest.raises(ActionInvalid) as refused:
        CreatePolicy(
            acting_user=admin_user,
            name="Never",
            floors_decide_on="interval",
            min_tool_effect_integrity=1.0,
        ).execute()
    assert refused.value.field == "floors_decide_on"
    with pytest.raises(IntegrityError):
        PublishingPolicy.objects.create(
            name="Never", floors_decide_on="interval", min_useful_progress=1.0
        )


def test_an_undecided_floor_is_told_with_what_would_decide_it():
    from evaluations.verdict.rule import insufficient_reason

    reason = insufficient_reason(floors(27, 30))
    assert reason.detail.startswith("the floors are undecided: useful progress 27/30")
    assert "repetitions weigh as one" in reason.fix
    assert reason.docs.endswith("/docs/contract/#deciding-on-the-interval")
