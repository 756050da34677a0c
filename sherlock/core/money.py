"""Money as text, the one formatter every page, the admin and the commands use:
thousands grouped and a precision that fits the amount, so "$13,967.09" a month reads at a
glance where "$13967.0880" does not, and a trial's "$0.0012" still says what it cost.

The rule (`usd` without ``places``):

- a dollar or more reads to the cent, thousands grouped: "$1.89", "$13,967.09";
- under a dollar, to four decimals with the zeros after the cent dropped, because per-trial
  and per-call costs live there and two decimals would round them away: "$0.52", "$0.0123",
  "$0.0012";
- an amount under $0.0001 that is not zero reads "<$0.0001", never "$0.0000" (zero, a cache
  hit, is "$0.00");
- halves round up ($1.125 is "$1.13"), as the contract rounds.

It is text for people: the API and the JSON output of the commands keep their numbers as
numbers and add these words beside them (`evaluations.costs.texts.format_usd` adds "price missing").
"""

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
TEN_THOUSANDTH = Decimal("0.0001")


def usd(amount: Decimal | float | int | str, places: int | None = None) -> str:
    """``amount`` in US dollars by the rule above: ``usd(13967.088)`` is "$13,967.09",
    ``usd(Decimal("0.0123"))`` "$0.0123", and a negative amount reads "-$1,200.00". ``places``
    fixes the decimals instead (``usd(12500, 2)``)."""
    value = Decimal(str(amount))
    size = abs(value)
    if places is not None:
        text = f"{size.quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP):,}"
    elif size >= 1:
        text = f"{size.quantize(CENT, ROUND_HALF_UP):,}"
    elif size and size.quantize(TEN_THOUSANDTH, ROUND_HALF_UP) == 0:
        return "<$0.0001" if value > 0 else "-<$0.0001"
    else:
        small = size.quantize(TEN_THOUSANDTH, ROUND_HALF_UP)
        text = f"{small.quantize(CENT) if small == small.quantize(CENT) else small.normalize()}"
    return f"-${text}" if value < 0 else f"${text}"
