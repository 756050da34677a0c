"""The daily judge spend cap of an online rule: reserve first, ask, settle.

Before a trace's model checks ask the judge, the trace's estimated judge cost is reserved on
the rule's row of the day (`OnlineSpend`) by one compare-and-set UPDATE that succeeds only
while what is spent, plus what is reserved by traces in flight, plus this estimate stays
within `daily_cap_usd`. No room: the trace is not scored (`capped`, and the day records when
the cap was reached). After scoring, the reservation is replaced by the cost of the calls made,
priced as every judge call is (`evaluations.costs`). So no ask starts beyond the cap: what a
day spends exceeds it only by what the last traces admitted cost beyond their estimate.

The estimate is the largest judge cost of the rule's recent scored traces, or, before there
is any, each model check's calls (`evaluations.costs.estimate.DEFAULT_CALLS`) at the default token
counts (`DEFAULT_JUDGE_TOKENS`) at the pinned model's price, whichever is larger. A pinned
model without a price cannot be held to a cap: its traces are not scored (said so).
"""

from __future__ import annotations

from datetime import datetime, time
from decimal import Decimal

from django.db.models import F, Value
from django.utils import timezone

from evaluations.checks import REGISTRY
from evaluations.costs.estimate import DEFAULT_CALLS, DEFAULT_JUDGE_TOKENS
from production.choices import ScoreState
from production.models import OnlineSpend, TraceScore

HISTORY = 50


def day_now():
    return timezone.localdate()


def estimate(rule, checks, prices) -> Decimal | None:
    """The judge cost to reserve for one trace of `rule` with `checks`; None when the pinned
    model has no price (the cap cannot be enforced)."""
    price = prices.get(rule.judge_model)
    if price is None:
        return None
    calls = sum(
        DEFAULT_CALLS.get(check.kind, 1)
        for check in checks
        if getattr(REGISTRY.get(check.kind), "uses_model", False)
    )
    prompt, completion = DEFAULT_JUDGE_TOKENS
    default = price.cost(prompt * calls, completion * calls) or Decimal(0)
    recent = (
        TraceScore.objects.filter(rule=rule, state=ScoreState.SCORED)
        .order_by("-id")
        .values_list("judge_usd", flat=True)[:HISTORY]
    )
    seen = max(recent, default=Decimal(0))
    return max(default, seen)


def reserve(rule, amount: Decimal, day=None) -> bool:
    """Hold `amount` of the rule's cap for `day` (today); False when it does not fit, and the
    day records that the cap was reached (first time) and one more trace left unscored."""
    day = day or day_now()
    OnlineSpend.objects.get_or_create(rule=rule, day=day)
    room = Value(rule.daily_cap_usd - amount) - F("reserved_usd")
    held = OnlineSpend.objects.filter(rule=rule, day=day, spent_usd__lte=room).update(
        reserved_usd=F("reserved_usd") + amount
    )
    if held:
        return True
    OnlineSpend.objects.filter(rule=rule, day=day).update(capped_traces=F("capped_traces") + 1)
    OnlineSpend.objects.filter(rule=rule, day=day, capped_at__isnull=True).update(
        capped_at=timezone.now(), capped_cap_usd=rule.daily_cap_usd
    )
    return False


def reopen(rule, day=None) -> int:
    """When the rule's cap was raised above the one that stopped scoring today, the traces
    left `capped` today get scored again: their scores are taken back (the sweep scores every
    complete trace without one, oldest first, within the new cap, and caps again if it is
    reached again) and the day is no longer stopped. Traces capped on earlier days stay so:
    a day's budget is spent on that day's traffic. Returns the number of traces reopened."""
    day = day or day_now()
    row = OnlineSpend.objects.filter(rule=rule, day=day, capped_at__isnull=False).first()
    if row is None or row.capped_cap_usd is None or rule.daily_cap_usd <= row.capped_cap_usd:
        return 0
    start = datetime.combine(day, time.min, tzinfo=timezone.get_current_timezone())
    reopened, _ = TraceScore.objects.filter(
        rule=rule, state=ScoreState.CAPPED, scored_at__gte=start
    ).delete()
    OnlineSpend.objects.filter(pk=row.pk, capped_at=row.capped_at).update(
        capped_at=None, capped_cap_usd=None, capped_traces=0
    )
    return reopened


def settle(rule, reserved: Decimal, spent: Decimal, day=None) -> None:
    """Replace a reservation by what the trace's judge calls cost."""
    OnlineSpend.objects.filter(rule=rule, day=day or day_now()).update(
        reserved_usd=F("reserved_usd") - reserved, spent_usd=F("spent_usd") + spent
    )


def day_spend(rule, day=None):
    """(spent, reserved, capped_at, capped traces, the cap that stopped scoring) of the rule's
    day, zeros and None when none."""
    row = OnlineSpend.objects.filter(rule=rule, day=day or day_now()).first()
    if row is None:
        return Decimal(0), Decimal(0), None, 0, None
    return row.spent_usd, row.reserved_usd, row.capped_at, row.capped_traces, row.capped_cap_usd
