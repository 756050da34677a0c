"""``{% load money %}``: money in templates through `evaluations.costs.texts.format_usd`, so every
page says "price missing (N calls)" the same way and never shows an unknown cost as $0.0000.

``{{ run.spend_usd|usd:run.unpriced_calls }}``, ``{{ row.total_usd|usd:row.missing }}``,
``{{ run.estimate|estimate }}`` (calls and cost), ``{{ run.estimate|estimate_usd }}`` (cost).
"""

from django import template

from evaluations.costs.texts import describe_estimate, estimate_cost, format_usd

register = template.Library()


@register.filter
def usd(amount, missing_calls=0):
    return format_usd(amount, missing_calls)


@register.filter
def item_usd(amount):
    """One call's, trial's or trace's cost: "(out of range)" beside a figure stored before
    figures were bounded."""
    return format_usd(amount, item=True)


@register.filter
def estimate(value):
    return describe_estimate(value)


@register.filter
def estimate_usd(value):
    return estimate_cost(value)
