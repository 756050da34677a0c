"""Prices: a model's price is a `ModelPrice` row (USD per million tokens); a model without a
row has no price, shown as "price missing" and never counted as $0. The cost of one agent call
and its billing coverage (`agent_cost`), and of judge calls (`price_judge_calls`), which the
run engine computes per trial without the database.
"""

from decimal import Decimal

from django.conf import settings

from evaluations.choices import BillingCoverage
from evaluations.models import (
    ModelPrice,
)


def load_prices():
    """Every model's price, model name -> ModelPrice: one query, for work that prices many
    calls (a shard of the run engine, a run's estimate); with `SHERLOCK_JUDGE_FREE`, the
    judge's model at $0 unless it has a row (`with_free_judge`)."""
    return with_free_judge({price.model: price for price in ModelPrice.objects.all()})


def with_free_judge(prices):
    """`prices` with the judge's model at $0 when `SHERLOCK_JUDGE_FREE` is set and no row
    prices it: a judge on the team's own server costs nothing (docs/judges.md)."""
    model = settings.SHERLOCK_JUDGE_MODEL
    if settings.SHERLOCK_JUDGE_FREE and model not in prices:
        prices = {
            **prices,
            model: ModelPrice(model=model, usd_per_million_input=0, usd_per_million_output=0),
        }
    return prices


def agent_cost(transcript, model, prices):
    """(usd, billing coverage) of one agent call.

    A cost the transcript reports (`cost_usd`, from the provider's bill) is `billed`. Without
    one, token usage priced with our `ModelPrice` table is `estimated`: our price list, not the
    provider's invoice, so the contract does not count it as covered cost. With no price, or no
    usage to price, the cost is unknown: `missing`, shown as "price missing", never $0.
    """
    if not transcript:
        return None, BillingCoverage.MISSING
    if transcript.get("cost_usd") is not None:
        return Decimal(str(transcript["cost_usd"])), BillingCoverage.BILLED
    usage = transcript.get("usage") or {}
    price = prices.get(transcript.get("model") or model)
    if price is not None and ("prompt_tokens" in usage or "completion_tokens" in usage):
        cost = price.cost(usage.get("prompt_tokens"), usage.get("completion_tokens"))
        return cost, BillingCoverage.ESTIMATED
    return None, BillingCoverage.MISSING


def price_judge_calls(calls, prices=None):
    """Set `usd` on the judge calls that were real requests; returns their priced total.

    `prices` is a `load_prices()` dict (the run engine loads one per shard); without it, the
    prices of the calls' models are looked up here, in one query. A model without a price
    leaves `usd=None` ("price missing"). A cache hit (`cached=True`) cost nothing: its `usd`
    stays null, which its `cached` flag tells apart from a missing price
    (`JudgeCall.price_missing`), and it is left out of the total.
    """
    real = [call for call in calls if not call.cached]
    if not real:
        return Decimal(0)
    if prices is None:
        models = {call.model for call in real}
        prices = with_free_judge({p.model: p for p in ModelPrice.objects.filter(model__in=models)})
    for call in real:
        price = prices.get(call.model)
        call.usd = price.cost(call.prompt_tokens, call.completion_tokens) if price else None
    return sum((call.usd for call in real if call.usd is not None), Decimal(0))
