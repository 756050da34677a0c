"""Money as text, with thousands separators, for every layer (issue 24): "$13,967.0880" a
month reads at a glance where "$13967.0880" does not. The kernel holds it so that the contract's
limits (cents), the costs' four-decimal figures (`evaluations.costs.format_usd`, the `usd`
template filter) and the commands all group digits the same way.
"""

from decimal import Decimal


def usd(amount, places: int | None = 4) -> str:
    """``amount`` in US dollars with grouped thousands: ``usd(13967.088)`` is "$13,967.0880",
    ``usd(Decimal("0.52"), places=None)`` keeps the value's own digits ("$0.52"), and a
    negative amount reads "-$1,200.0000"."""
    value = Decimal(str(amount))
    text = f"{abs(value):,.{places}f}" if places is not None else f"{abs(value):,}"
    return f"-${text}" if value < 0 else f"${text}"
