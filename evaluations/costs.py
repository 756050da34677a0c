"""Every price and cost computation of Sherlock, in one place.

A model's price is a `ModelPrice` row (USD per million tokens; `ModelPrice.cost` prices one
call's tokens). A model without a row has no price: what it costs is unknown, shown as "price
missing" and never counted as $0. On that rule this module builds:

- the estimate `StartRun` stores on a run before it starts (`estimate_run`), with the judge's
  status and a warning naming the blocking model checks that cannot be scored, and the one the
  start forms show before a person confirms (`estimate_start`);
- the cost of one agent call and its billing coverage (`agent_cost`), and of judge calls
  (`price_judge_calls`, from prices loaded once or looked up in one query), which the run
  engine computes per trial without the database (`evaluations.engine.trials`);
- the lines of the cost ledger (`CostEntry`) for agent and judge calls (`agent_cost_line`,
  `judge_cost_lines`), written with their daily totals (`DailyCost`: `write_cost_lines`,
  re-kinded with them by `rekind_cost_lines`, computed anew by `rebuild_daily_costs`);
- a stored trial's whole cost (agent + judge) with its coverage, as the contract of stored runs
  and the trial-record export judge it (`trials_with_judge_cost`, `trial_cost`,
  `unattributed_judge_spend`, and `unattributed_judge_spend_of` for many runs at once);
- the cost views: the ledger by day, agent and kind (`daily_ledger`, from the daily
  totals), and the one money text
  of every page, the admin, the commands (`format_usd`: "price missing (N calls)", never
  $0.0000) with a run's spend and estimate in words (`describe_spend`, `describe_estimate`),
  and the warning of an estimate with calls that have no price (`coverage_warning`).

The run engine and the judge's ORM recorder (`evaluations.judge.recording.record_calls`, for
judge calls made outside a trial) both price judge calls and write their ledger lines here,
through `write_cost_lines`, the one writer of lines.
"""

from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Avg, Count, Exists, F, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Coalesce

from evaluations.choices import BillingCoverage, CheckMode, CostKind, TrialStatus
from evaluations.contract.db import MONEY, ZERO
from evaluations.models import (
    CaseVersion,
    CheckResult,
    CostEntry,
    DailyCost,
    JudgeCall,
    ModelPrice,
    Run,
    Trial,
)
from sherlock.core.bulk import insert_objects
from sherlock.core.money import usd
from sherlock.core.numbers import TOTAL, USD, is_out_of_range

# --- prices ----------------------------------------------------------------------------------


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


# --- the cost ledger -------------------------------------------------------------------------


def judge_cost_lines(calls, *, day, agent_id, run_id, trial_id):
    """Unsaved `CostEntry` lines, one per real judge call of `calls` (priced first with
    `price_judge_calls`); a cache hit costs nothing and gets no line. Each line points at its
    call, so the calls must be inserted before the lines."""
    return [
        CostEntry(
            kind=CostKind.SCORING,
            day=day,
            model=call.model,
            prompt_tokens=call.prompt_tokens,
            completion_tokens=call.completion_tokens,
            usd=call.usd,
            agent_id=agent_id,
            run_id=run_id,
            trial_id=trial_id,
            judge_call=call,
        )
        for call in calls
        if not call.cached
    ]


def agent_cost_line(
    *, model, prompt_tokens, completion_tokens, usd, day, agent_id, run_id, trial_id
):
    """The unsaved `CostEntry` of one agent call (`usd` from `agent_cost`; None: price
    missing)."""
    return CostEntry(
        kind=CostKind.AGENT,
        day=day,
        model=model,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        usd=usd,
        agent_id=agent_id,
        run_id=run_id,
        trial_id=trial_id,
    )


def write_cost_lines(lines):
    """Insert ledger lines (`sherlock.core.bulk.insert_objects`: COPY on PostgreSQL) and add
    them to the daily totals (`DailyCost`), in one transaction (the caller's when it has one):
    the one way lines are written, so the totals the cost page reads are those of the lines.

    A few statements whatever the number of lines: the insert, one to make sure each day's row
    exists and one UPDATE per row the lines add to (a batch of the engine's writer adds to two:
    its run's agent and scoring lines of the day), plus one lookup of the runs' agents when a
    line names a run but no agent."""
    lines = list(lines)
    if not lines:
        return
    with transaction.atomic(savepoint=False):
        insert_objects(CostEntry, lines)
        _add_to_daily_costs(lines, 1)


def rekind_cost_lines(lines, kind):
    """Give the ledger lines of the queryset `lines` the kind `kind` (a run's summary: its judge
    calls become `summary` lines), moving their sums from one daily total to the other in the
    same transaction."""
    with transaction.atomic(savepoint=False):
        moved = list(lines.exclude(kind=kind).select_related("judge_call"))
        if not moved:
            return
        _add_to_daily_costs(moved, -1)
        CostEntry.objects.filter(pk__in=[line.pk for line in moved]).update(kind=kind)
        for line in moved:
            line.kind = kind
        _add_to_daily_costs(moved, 1)


def summed_lines(lines):
    """The ledger lines of the queryset `lines` summed per day, kind, agent (the line's, else its
    run's) and run: `DailyCost`'s rows as dicts (``agent_id`` and ``run_id`` for the keys), in
    one query. A line bound to no agent, directly or through its run, is in no row."""
    return (
        lines.annotate(owner=Coalesce("agent_id", "run__agent_version__agent_id"))
        .filter(owner__isnull=False)
        .values("day", "kind", "owner", "run_id")
        .annotate(
            entries=Count("id"),
            priced=Count("usd"),
            missing=Count("id", filter=Q(usd__isnull=True) & ~Q(judge_call__cached=True)),
            prompt_tokens=Coalesce(Sum("prompt_tokens"), 0),
            completion_tokens=Coalesce(Sum("completion_tokens"), 0),
            usd=Coalesce(Sum("usd"), ZERO),
        )
        .order_by()
    )


def rebuild_daily_costs(runs=None):
    """Compute the daily totals anew from the lines: of `runs` (the rows bound to them), or all
    of them. For lines written without `write_cost_lines` (a bench's fixture COPYs them), and
    the tests that hold the kept totals against the lines."""
    with transaction.atomic():
        lines, rows = CostEntry.objects.all(), DailyCost.objects.all()
        if runs is not None:
            ids = [run.pk for run in runs]
            lines, rows = lines.filter(run_id__in=ids), rows.filter(run_id__in=ids)
        rows.delete()
        DailyCost.objects.bulk_create(
            [DailyCost(agent_id=row.pop("owner"), **row) for row in summed_lines(lines).iterator()],
            batch_size=1000,
        )


SUMMED = ("entries", "priced", "missing", "prompt_tokens", "completion_tokens", "usd")


def _add_to_daily_costs(lines, sign):
    """Add (``sign`` 1) or take away (-1) saved or about-to-be-saved `lines` to or from their
    daily totals, as `summed_lines` sums them."""
    orphans = {line.run_id for line in lines if line.agent_id is None and line.run_id is not None}
    agent_of_run = {}
    if orphans:
        agent_of_run = dict(
            Run.objects.filter(pk__in=orphans).values_list("pk", "agent_version__agent_id")
        )
    # Whether a line without a price was an answer from the judge's cache (no cost, not
    # missing): the engine's and the recorder's lines hold their call; others are looked up.
    unknown = {
        line.judge_call_id
        for line in lines
        if line.usd is None
        and line.judge_call_id is not None
        and not CostEntry.judge_call.field.is_cached(line)
    }
    cached_calls = set()
    if unknown:
        cached_calls = set(
            JudgeCall.objects.filter(pk__in=unknown, cached=True).values_list("pk", flat=True)
        )
    totals = {}
    for line in lines:
        agent = line.agent_id or agent_of_run.get(line.run_id)
        if agent is None:
            continue
        total = totals.setdefault(
            (line.day, line.kind, agent, line.run_id), dict.fromkeys(SUMMED, 0)
        )
        total["entries"] += 1
        total["prompt_tokens"] += line.prompt_tokens or 0
        total["completion_tokens"] += line.completion_tokens or 0
        if line.usd is not None:
            total["priced"] += 1
            total["usd"] += Decimal(str(line.usd))
        elif not _cached(line, cached_calls):
            total["missing"] += 1
    if not totals:
        return
    # In one order whoever writes, the inserts as the updates: two writers of one run's lines
    # take the rows' locks (an INSERT ... ON CONFLICT waits on another's uncommitted insert of
    # the same key, the UPDATE's lock is held to the commit) in the same order, so neither
    # waits on the other in a ring.
    keys = sorted(totals, key=lambda k: (k[0], k[1], k[2], k[3] or 0))
    DailyCost.objects.bulk_create(
        [
            DailyCost(day=day, kind=kind, agent_id=agent, run_id=run)
            for day, kind, agent, run in keys
        ],
        ignore_conflicts=True,
    )
    for key in keys:
        day, kind, agent, run = key
        DailyCost.objects.filter(day=day, kind=kind, agent_id=agent, run_id=run).update(
            **{name: F(name) + sign * value for name, value in totals[key].items() if value}
        )


def _cached(line, cached_calls):
    if line.judge_call_id is None:
        return False
    if CostEntry.judge_call.field.is_cached(line):
        return line.judge_call is not None and line.judge_call.cached
    return line.judge_call_id in cached_calls


def daily_ledger(agents, since):
    """The cost page's rows: the ledger of `agents` since `since` by day, agent and kind, with
    entries, tokens, priced USD and the lines whose price is missing, in one query.

    Read from the daily totals (`DailyCost`, kept by `write_cost_lines`), not the lines: a
    month of the ledger may hold a million lines, and summing them took 1.2 s a request on
    SQLite (`bench/pages_scale.py`). A line bound to no agent counts for its run's agent; a
    line without a price counts as missing, not $0, and USD is no amount when no line of a
    row has a price; a cached judge answer cost nothing and is not missing.
    """
    rows = (
        DailyCost.objects.filter(day__gte=since, agent__in=agents)
        .values("day", "kind", "agent__slug")
        .annotate(
            n=Sum("entries"),
            priced=Sum("priced"),
            usd=Sum("usd"),
            tokens_in=Sum("prompt_tokens"),
            tokens_out=Sum("completion_tokens"),
            missing=Sum("missing"),
        )
        .filter(n__gt=0)  # a row whose lines were all re-kinded holds nothing
        .order_by()
    )
    ledger = [
        {
            "day": row["day"],
            "agent__slug": row["agent__slug"],
            "kind": row["kind"],
            "n": row["n"],
            "tokens_in": row["tokens_in"],
            "tokens_out": row["tokens_out"],
            "missing": row["missing"],
            "total_usd": row["usd"] if row["priced"] else None,
        }
        for row in rows
    ]
    return sorted(ledger, key=lambda r: (-r["day"].toordinal(), r["agent__slug"], r["kind"]))


# --- a stored trial's whole cost (the contract, the export) ----------------------------------


def trials_with_judge_cost(run):
    """The run's trials, each annotated with ``judge_usd`` (its priced judge spend) and
    ``judge_unpriced`` (one of its judge calls has no price), for the contract's totals
    (`evaluations.contract.db.run_totals`) and the trial-record export."""
    scoring = (
        CostEntry.objects.filter(trial=OuterRef("pk"), kind=CostKind.SCORING)
        .order_by()
        .values("trial")
    )
    return Trial.objects.filter(run=run).annotate(
        judge_usd=Coalesce(
            Subquery(scoring.annotate(total=Sum("usd")).values("total"), output_field=MONEY),
            ZERO,
        ),
        judge_unpriced=Exists(scoring.filter(usd__isnull=True)),
    )


def trial_cost(trial):
    """(usd or None, billing coverage) of one trial annotated by `trials_with_judge_cost`: its
    agent cost plus its judge spend, judged as ``run_totals`` judges it in SQL (an unpriced
    judge call makes the cost missing; `billed` without an amount is missing)."""
    if trial.judge_unpriced:
        return None, BillingCoverage.MISSING.value
    coverage = trial.billing_coverage
    if coverage == BillingCoverage.BILLED and trial.cost_usd is None:
        coverage = BillingCoverage.MISSING.value
    if coverage == BillingCoverage.MISSING:
        return None, coverage
    return (trial.cost_usd or Decimal(0)) + trial.judge_usd, coverage


def unattributed_judge_spend(run):
    """(priced USD, unpriced calls) of the run's judge spend bound to no trial: the contract
    adds it to the run's covered cost, and the export, which cannot place it in a trial
    record, says so."""
    return unattributed_judge_spend_of([run]).get(run.pk, (Decimal(0), 0))


def unattributed_judge_spend_of(runs):
    """``{run pk: (priced USD, unpriced calls)}`` of the judge spend bound to no trial of
    ``runs``, in one query grouped by run; a run without such spend is left out."""
    rows = (
        CostEntry.objects.filter(
            run_id__in=[run.pk for run in runs], kind=CostKind.SCORING, trial__isnull=True
        )
        .values("run_id")
        .annotate(priced=Sum("usd"), unpriced=Count("pk", filter=Q(usd__isnull=True)))
        .order_by()
    )
    return {row["run_id"]: (row["priced"] or Decimal(0), row["unpriced"]) for row in rows}


# --- the texts every page, command and the admin show ----------------------------------------


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
    (`trial_cost`); the contract's coverage gate fails on any trial without (docs/contract.md,
    "coverage: N trial(s) with missing cost"). So a judge model without a price fails the gate
    for sure; an agent with neither a price nor a cost history fails it unless it reports its
    billed cost. ``coverage_required`` is the applied thresholds' (a policy may waive the
    gate: then nothing to warn about)."""
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


# --- the estimate ----------------------------------------------------------------------------

# A rubric's prompt and a short structured answer, when a check has no history yet.
DEFAULT_JUDGE_TOKENS = (900, 150)
# Judge questions per trial of the kinds that ask more than one (docs/checks.md, "The judge").
DEFAULT_CALLS = {"faithfulness": 2}
HISTORY = 50


def estimate_run(agent_version, dataset_version, checks, cases, repetitions):
    """What a run will cost before it starts: calls and USD for the agent and each model check.

    The calls come from the dataset alone, so the same dataset version, checks and repetitions
    always give the same count: one agent call per case and repetition, and for each model
    check its questions per trial (`DEFAULT_CALLS`: two for faithfulness, one for the others)
    times the trials of the cases it is not disabled for. A re-ask (a malformed answer, a retry)
    is not foreseen, and an answer from the cache costs nothing: the count is what the checks
    ask. History refines only the tokens and the cost, and `basis` says from what: the judge's
    tokens per question from the newest results of the same check (same dataset, label and
    kind), else defaults; the agent's cost from its version's recent trials (their cost, else
    their tokens x the version model's price). A part without a price makes `usd` null and is
    named in `price_missing` with its calls counted in `price_missing_calls`, never counted as
    $0. `judge` is the judge's status (`evaluations.judge.probe.judge_status`) and `warnings`
    name the blocking model checks that cannot be scored (`judge_warnings`). `StartRun` stores
    it on the run.
    """
    from evaluations.checks import REGISTRY
    from evaluations.judge.probe import judge_status

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
    from evaluations.checks import REGISTRY
    from evaluations.checks.rubrics import KIND_FAMILIES
    from evaluations.judge.setup import no_judge_warning

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
