"""The estimate `StartRun` stores on a run before it starts (`estimate_run`), with the judge's
status and a warning naming the blocking model checks that cannot be scored, and the one the
start forms show before a person confirms (`estimate_start`).
"""

from decimal import Decimal

from django.conf import settings
from django.db.models import Avg, Count

from evaluations.checks import REGISTRY
from evaluations.checks.rubrics import KIND_FAMILIES
from evaluations.choices import CheckMode, TrialStatus
from evaluations.costs.prices import load_prices
from evaluations.costs.texts import estimate_missing_calls
from evaluations.judge.probe import judge_status
from evaluations.judge.setup import no_judge_warning
from evaluations.models import (
    CaseVersion,
    CheckResult,
    JudgeCall,
    Trial,
)

# A rubric's prompt and a short structured answer, when a check has no history yet.
DEFAULT_JUDGE_TOKENS = (900, 150)
# Judge questions per trial of the kinds that ask more than one (docs/checks.md, "The judge").
DEFAULT_CALLS = {"faithfulness": 2}
HISTORY = 50


def estimate_run(agent_version, dataset_version, checks, cases, repetitions):
    """What a run will cost before it starts: calls and USD for the agent and each model check.

    The calls come from the dataset alone (one agent call per case and repetition, each model
    check's questions per trial it applies to), so the same dataset always counts the same;
    history refines only tokens and cost, and `basis` says from what. A part without a price
    makes `usd` null and is named in `price_missing`, never counted as $0; `judge` and
    `warnings` say whether the blocking model checks can be scored. docs/schedules.md, "The
    estimate".
    """

    prices = load_prices()
    judged = bool(settings.SHERLOCK_JUDGE_BASE_URL)
    trials = cases * repetitions
    models = [c for c in checks if (kind := REGISTRY.get(c.kind)) is not None and kind.uses_model]
    disabled = _disabled_for(dataset_version, models)
    price_missing, per_check, judge_calls, judge_usd = set(), {}, 0, Decimal(0)
    for check in models:
        model = check.judge_model or settings.SHERLOCK_JUDGE_MODEL
        questions = DEFAULT_CALLS.get(check.kind, 1)
        prompt, completion, basis = _judge_tokens(dataset_version, check)
        scored_trials = (cases - disabled.get(check.label, 0)) * repetitions
        calls = scored_trials * questions if judged else 0
        price = prices.get(model)
        usd = price.cost(round(calls * prompt), round(calls * completion)) if price else None
        if usd is None and calls:
            price_missing.add(model)
        judge_calls += calls
        judge_usd += usd or 0
        per_check[check.label] = {
            "model": model,
            "calls": calls,
            "questions_per_trial": questions,
            "trials": scored_trials,
            "prompt_tokens_per_call": round(prompt),
            "completion_tokens_per_call": round(completion),
            "usd": _money(usd),
            "basis": basis if judged else "no judge configured: the check will be skipped",
        }
    judge_complete = not price_missing
    agent_usd, agent_basis = _agent_estimate(agent_version, trials, prices)
    if agent_usd is None:
        price_missing.add(f"agent {agent_version}")
    known = judge_usd + (agent_usd or 0)
    status = judge_status()
    estimate = {
        "trials": trials,
        "agent_calls": trials,
        "judge_calls": judge_calls,
        "calls": trials + judge_calls,
        "agent_usd": _money(agent_usd),
        "agent_basis": agent_basis,
        "judge_usd": _money(judge_usd) if judge_complete else None,
        "usd": _money(known) if not price_missing else None,
        "usd_known": _money(known),
        "price_missing": sorted(price_missing),
        "checks": per_check,
        "judge": {
            key: status[key]
            for key in ("configured", "ok", "probed_at", "failed_families", "summary")
            if key in status
        },
        "warnings": judge_warnings(checks, status),
    }
    estimate["price_missing_calls"] = estimate_missing_calls(estimate)
    return estimate


def estimate_start(agent_version, dataset_version, repetitions):
    """`estimate_run` of a run not started yet (the start forms show it before confirming):
    the dataset version's cases x `repetitions` trials, with its checks."""
    cases = CaseVersion.objects.filter(dataset_version=dataset_version).count()
    checks = list(dataset_version.checks.all())
    return estimate_run(agent_version, dataset_version, checks, cases, repetitions)


def _disabled_for(dataset_version, checks):
    """``{label: cases whose override disables it}`` for ``checks``; one query over the cases
    that have overrides, none without model checks."""
    if not checks:
        return {}
    labels = {check.label for check in checks}
    disabled: dict[str, int] = {}
    overrides = (
        CaseVersion.objects.filter(dataset_version=dataset_version)
        .exclude(overrides={})
        .values_list("overrides", flat=True)
    )
    for override in overrides:
        if not isinstance(override, dict):
            continue
        for label, entry in override.items():
            if label in labels and isinstance(entry, dict) and entry.get("disabled"):
                disabled[label] = disabled.get(label, 0) + 1
    return disabled


def judge_warnings(checks, status):
    """Warnings for the blocking model checks that cannot be scored: with no judge configured
    the one sentence of `evaluations.judge.setup` (they will be skipped), or those whose
    rubric family failed the newest `check_judge` probe of the configured server and model
    (checks asking another model are not covered by that probe)."""

    blocking = [
        check
        for check in checks
        if check.mode == CheckMode.BLOCKING
        and getattr(REGISTRY.get(check.kind), "uses_model", False)
    ]
    if not blocking:
        return []
    if not status["configured"]:
        # The one sentence every surface says (evaluations.judge.setup).
        return [no_judge_warning([check.label for check in blocking], configured=False)]
    warnings = []
    for family in status["failed_families"]:
        labels = [
            check.label
            for check in blocking
            if KIND_FAMILIES.get(check.kind) == family
            and (check.judge_model or status["model"]) == status["model"]
        ]
        if labels:
            failure = status["families"][family]
            warnings.append(
                f"blocking model checks may not be scored: {', '.join(labels)} (the last "
                f"check_judge probe of {status['model']} failed for {family}: "
                f"{failure['error']}; {failure['advice']})"
            )
    return warnings


def _judge_tokens(dataset_version, check):
    """(prompt tokens per call, completion tokens per call, basis): the mean of the uncached
    calls of the newest results of the same check, else the defaults."""
    recent = (
        CheckResult.objects.filter(
            check_config__dataset_version__dataset_id=dataset_version.dataset_id,
            check_config__label=check.label,
            check_config__kind=check.kind,
        )
        .order_by("-id")
        .values_list("judge_call_ids", flat=True)[: HISTORY * 4]
    )
    results = [ids for ids in recent if ids][:HISTORY]
    if results:
        stats = JudgeCall.objects.filter(
            pk__in=[pk for ids in results for pk in ids], cached=False
        ).aggregate(n=Count("id"), prompt=Avg("prompt_tokens"), completion=Avg("completion_tokens"))
        if stats["n"]:
            return (
                float(stats["prompt"]),
                float(stats["completion"]),
                f"tokens per question from the last {len(results)} results of this check",
            )
    prompt, completion = DEFAULT_JUDGE_TOKENS
    return prompt, completion, "tokens per question: defaults (no history yet)"


def _agent_estimate(agent_version, trials, prices):
    """(usd or None, basis) of the agent's calls of a run of `trials` trials."""
    recent = list(
        Trial.objects.filter(run__agent_version=agent_version, status=TrialStatus.COMPLETED)
        .order_by("-id")
        .values_list("cost_usd", "prompt_tokens", "completion_tokens")[:HISTORY]
    )
    costs = [cost for cost, _, _ in recent if cost is not None]
    if costs:
        mean = sum(costs, Decimal(0)) / len(costs)
        return mean * trials, f"the cost of its last {len(costs)} trials"
    price = prices.get(agent_version.config.get("model") or "")
    if price is not None and recent:
        prompt = sum(p for _, p, _ in recent) / len(recent)
        completion = sum(c for _, _, c in recent) / len(recent)
        usd = price.cost(round(prompt * trials), round(completion * trials))
        return usd, f"tokens of its last {len(recent)} trials x the price of its model"
    if price is None:
        return None, "unknown: no cost history, and no price for its model"
    return None, "unknown: no trials of this version yet to measure its tokens"


def _money(value):
    return None if value is None else round(float(value), 6)
