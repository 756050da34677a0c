"""The money texts of every page, the admin and the commands: `format_usd` ("price missing (N
calls)", never $0.0000), a run's spend and estimate in words, and the warning of an estimate
with calls that have no price (`coverage_warning`).
"""

from sherlock.core.money import usd
from sherlock.core.numbers import TOTAL, USD, is_out_of_range


def _calls(n):
    return f"{n} call" if n == 1 else f"{n} calls"


def format_usd(amount, missing_calls=0, *, item=False):
    """Money as every page, the admin and the commands show it: "$0.0123", "$1.89",
    thousands grouped ("$13,967.09"; the rule is `sherlock.core.money`'s); with
    calls whose price is missing, "price missing (3 calls)" when nothing is priced, or
    "$0.0123 + price missing (3 calls)"; an amount of None is "price missing". Never $0.0000
    for an unknown cost. An amount outside its range (``item``: one call, trial or trace,
    `sherlock.core.numbers.USD`; else a total) is shown with "(out of range)" beside it.
    Templates use it as ``{{ amount|usd:missing_calls }}`` (`evaluations.templatetags.money`)."""
    missing_calls = int(missing_calls or 0)
    if is_out_of_range(amount, USD if item else TOTAL):
        # Stored before figures were bounded: shown as it is, said so, never a 500.
        return f"{usd(amount)} (out of range)"
    if amount is None:
        return f"price missing ({_calls(missing_calls)})" if missing_calls else "price missing"
    if missing_calls:
        missing = f"price missing ({_calls(missing_calls)})"
        return f"{usd(amount)} + {missing}" if amount else missing
    return usd(amount)


def describe_spend(run):
    """A run's spend so far, agent and judge, with the judge's priced share when it has one,
    for the admin and `evaluate`; calls without a price are counted, never shown as $0."""
    text = format_usd(run.spend_usd, run.unpriced_calls)
    if run.judge_spend_usd:
        text += f" (judge {format_usd(run.judge_spend_usd)})"
    return text


def estimate_missing_calls(estimate):
    """How many of an estimate's calls (`estimate_run`) have no price: the agent's calls when
    its cost is unknown, and the judge calls of each model check whose model has no price."""
    estimate = estimate or {}
    if "price_missing_calls" in estimate:
        return estimate["price_missing_calls"]
    missing = estimate.get("agent_calls", 0) if estimate.get("agent_usd") is None else 0
    for check in (estimate.get("checks") or {}).values():
        if check.get("usd") is None:
            missing += check.get("calls") or 0
    return missing


def describe_estimate(estimate):
    """A run's estimate (`estimate_run`) in one line for the admin, the run list and
    `evaluate`: calls, and the USD, or the known part + "price missing (N calls)" for what
    lacks a price, then its warnings (blocking model checks that cannot be scored)."""
    estimate = estimate or {}
    if not estimate:
        return "-"
    cost = estimate_cost(estimate)
    if estimate.get("usd") is None and estimate.get("price_missing"):
        cost += f" for {', '.join(estimate['price_missing'])}"
    text = f"{estimate.get('calls')} calls ({estimate.get('judge_calls')} judge), {cost}"
    for warning in estimate.get("warnings") or ():
        text += f". Warning: {warning}"
    return text


def estimate_cost(estimate):
    """An estimate's money alone: "$0.0200", or the known part + "price missing (N calls)"."""
    estimate = estimate or {}
    if estimate.get("usd") is not None:
        return format_usd(estimate["usd"])
    return format_usd(estimate.get("usd_known") or None, estimate_missing_calls(estimate))


PRICES_PLACE = "Admin > Evaluations > Model prices"


def coverage_warning(estimate, coverage_required=True):
    """The warning an estimate needs when some of its calls have no price, or None.

    A trial's cost is covered only when it is billed and each of its judge calls has a price
    (`trial_cost`); the contract's coverage gate fails on any trial without ("coverage: N
    trial(s) with missing cost", docs/contract.md, "Coverage"). So a judge model without a
    price fails the gate for sure; an agent with neither a price nor a cost history fails it
    unless it reports its billed cost. ``coverage_required`` is the applied thresholds' (a
    policy may waive the gate: then nothing to warn about)."""
    estimate = estimate or {}
    if not coverage_required or not estimate_missing_calls(estimate):
        return None
    judges = sorted(
        {
            check["model"]
            for check in (estimate.get("checks") or {}).values()
            if check.get("usd") is None and check.get("calls")
        }
    )
    parts = []
    if judges:
        parts.append(
            f"judge calls without a price ({', '.join(judges)}): the contract's coverage gate "
            "will fail, every trial they score having no billed cost"
        )
    if estimate.get("agent_usd") is None and estimate.get("agent_calls"):
        parts.append(
            "agent calls without a price or a cost history: the contract's coverage gate will "
            "fail unless the agent reports its billed cost"
        )
    if not parts:
        return None
    text = "; ".join(parts)
    return f"{text[0].upper()}{text[1:]}. An Admin sets a price under {PRICES_PLACE}."
