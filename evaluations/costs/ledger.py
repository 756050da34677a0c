"""The cost ledger: its lines (`CostEntry`) for agent and judge calls, written with their daily
totals (`DailyCost`) by `write_cost_lines`, the one writer of lines (the run engine and the
judge's ORM recorder both call it); the ledger by day, agent and kind (`daily_ledger`); and a
stored trial's whole cost (agent + judge) with its coverage, as the contract of stored runs and
the trial-record export judge it (`trials_with_judge_cost`, `trial_cost`,
`unattributed_judge_spend`).
"""

from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Coalesce

from evaluations.choices import BillingCoverage, CostKind
from evaluations.contract.db import MONEY, ZERO
from evaluations.models import (
    CostEntry,
    DailyCost,
    JudgeCall,
    Run,
    Trial,
)
from sherlock.core.bulk import insert_objects


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
    totals: dict[Any, Any] = {}
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
    (`evaluations.contract.runs.run_totals`) and the trial-record export."""
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
