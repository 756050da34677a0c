"""A finished run's figures: the aggregates of its check results, computed once, stored, read.

When a run finishes (`evaluations.engine.completion.compute_case_results`, also for the runs
`ImportTrials` stores), one aggregate query over its check results, grouped by case, check,
blocking and status (`check_groups`), gives what its case results need; the same rows summed
per check as they stream past (`Tally`), with the contract's totals of its trials
(`evaluations.contract.db.trial_totals`), are stored in `Run.figures` (`build`):

- ``totals``: the run's `VariantTotals` from its trials, quality included; the judge spend
  bound to no trial, which may be recorded later, stays out (`run_totals` reads it live);
- ``checks``: one row per check, in the dataset's order: id, label, mode, results, the counts
  by status, the number and sum of scores, the results that did not block (``informative``),
  and the blocking results skipped or in error with one reason each;
- ``trials_error``: trials in error.

A finished run's trials and check results do not change any more, so its page, the compare
page, the trends and the gate decision read these (`stored_totals`, `stored_check_stats`,
`stored_unscored`, `stored_checks`) instead of aggregating 400,000 rows per view (
a run of 100,000 trials). A run without figures (still running, finished before figures
existed, built by hand) is aggregated live, by the same rules and in a constant number of
queries. Means are the database's sum of the scores over their count.
"""

from decimal import Decimal
from typing import Any

from django.db.models import Count, F, FloatField, Max, Min, Q, Sum
from django.db.models.functions import Floor

from evaluations.choices import CheckStatus
from evaluations.contract.db import GRADER_RAN, SCORE_UNITS, run_variant, trial_totals
from evaluations.contract.totals import VariantTotals
from evaluations.models import CheckResult

VERSION = 1
# Plain strings: compared and used as keys for every row.
STATUSES = tuple(str(status) for status in CheckStatus)
UNSCORED = (str(CheckStatus.SKIPPED), str(CheckStatus.ERROR))
RAN = frozenset(str(status) for status in GRADER_RAN)


# Rows fetched at a time from the database (a server-side cursor on PostgreSQL).
CHUNK = 2000


def check_groups(run):
    """The run's check results, one row per (case, check, blocking, status), in that order:
    tuples (case_id, check_config_id, blocking, status, first_repetition, results, scores,
    score_sum, units, reason), ``scores`` and ``score_sum`` being the results with a score and
    their sum, ``units`` the sum of the scores in millionths (as `quality_totals` counts the
    quality grader's) and ``reason`` the largest reason of an unscored status. One query, a
    handful of aggregates per row: 400,000 results of a run of 100,000 trials come back as
    about 40,000 rows, streamed `CHUNK` at a time, never all held at once."""
    return (
        CheckResult.objects.filter(trial__run=run)
        .values_list("trial__case_id", "check_config_id", "blocking", "status")
        .annotate(
            first_repetition=Min("trial__repetition"),
            results=Count("pk"),
            scores=Count("score"),
            score_sum=Sum("score"),
            # Of every check (`build` keeps the quality grader's): a filter on the check
            # would join every result to its check, about 50 ms of 400,000 results.
            units=Sum(Floor(F("score") * SCORE_UNITS + 0.5), output_field=FloatField()),
            reason=Max("reason", filter=Q(status__in=UNSCORED)),
        )
        .order_by("trial__case_id", "check_config_id", "blocking", "status")
        .iterator(chunk_size=CHUNK)
    )


class Tally:
    """The per-check sums of a run's `check_groups` rows, fed one row at a time (`add`) while
    they stream past, so that `build` needs none of them kept."""

    def __init__(self):
        self.per_check = {}

    def add(self, row):
        _case, pk, blocking, status, _first, results, scores, score_sum, units, reason = row
        entry = self.per_check.get(pk)
        if entry is None:
            entry = self.per_check[pk] = {
                "results": 0,
                "n_scored": 0,
                "score_sum": 0.0,
                "informative": 0,
                "graded": 0,
                "units": 0,
                **dict.fromkeys(STATUSES, 0),
                "unscored_blocking": dict.fromkeys(UNSCORED, 0),
                "reasons": {},
            }
        entry["results"] += results
        entry[status] += results
        entry["n_scored"] += scores
        entry["score_sum"] += score_sum or 0.0
        if status in RAN:
            entry["graded"] += scores
            entry["units"] += int(units or 0)
        if not blocking:
            entry["informative"] += results
        elif status in UNSCORED:
            entry["unscored_blocking"][status] += results
            entry["reasons"][status] = max(entry["reasons"].get(status, ""), reason or "")


def build(run, tally, checks, trials_error):
    """The figures of ``run`` from the `Tally` of its ``check_groups`` rows, ``checks`` (id ->
    Check, every check of the tally) and its number of trials in error; two more queries
    (`trial_totals`)."""
    rows = []
    for pk, sums in tally.per_check.items():
        check = checks[pk]
        rows.append(
            {
                "id": check.pk,
                "label": check.label,
                "mode": check.mode,
                "position": check.position,
                "quality_grader": check.quality_grader,
                **sums,
                "units": sums["units"] if check.quality_grader else 0,
            }
        )
    ordered = sorted(rows, key=lambda c: (c["position"], c["label"]))
    totals = trial_totals(run)
    graders = [c for c in ordered if c["quality_grader"]]
    totals.graded = sum(c["graded"] for c in graders)
    totals.quality_sum = Decimal(sum(c["units"] for c in graders)) / SCORE_UNITS
    return {
        "version": VERSION,
        "totals": {
            name: str(value) if isinstance(value, Decimal) else value
            for name, value in vars(totals).items()
            if name not in ("variant", "unpriced_judge_calls")
        },
        "checks": ordered,
        "trials_error": trials_error,
    }


def _figures(run):
    figures = getattr(run, "figures", None) or {}
    return figures if figures.get("version") == VERSION else None


def stored_totals(run) -> VariantTotals | None:
    """The stored trial totals of ``run`` (no query), or None when it has no figures."""
    figures = _figures(run)
    if figures is None:
        return None
    fields = VariantTotals.__dataclass_fields__
    values: dict[str, Any] = {
        name: Decimal(value) if fields[name].type in (Decimal, "Decimal") else value
        for name, value in figures["totals"].items()
    }
    return VariantTotals(variant=run_variant(run), **values)


def stored_checks(run):
    """The stored per-check rows of ``run`` (dataset order), or None without figures."""
    figures = _figures(run)
    return None if figures is None else figures["checks"]


def stored_trials_error(run):
    figures = _figures(run)
    return None if figures is None else figures["trials_error"]


def check_stats_of(rows):
    """``{label: stats}`` from stored check rows, in the shape of
    `evaluations.reads.trends.check_stats`."""
    stats = {}
    for row in rows:
        judged = row["passed"] + row["failed"]
        stats[row["label"]] = {
            "mode": row["mode"],
            "results": row["results"],
            "mean": row["score_sum"] / row["n_scored"] if row["n_scored"] else None,
            "passed": row["passed"],
            "failed": row["failed"],
            "scored": row["scored"],
            "unscored": row["skipped"] + row["error"],
            "pass_rate": row["passed"] / judged if judged else None,
        }
    return stats


def unscored_of(rows):
    """The blocking results that could not be scored, per check and status, from stored check
    rows: the shape of `evaluations.reads.results_grid.unscored_checks`."""
    groups = [
        {
            "label": row["label"],
            "status": status,
            "n": row["unscored_blocking"][status],
            "reason": row["reasons"].get(status, ""),
        }
        for row in rows
        for status in sorted(row["unscored_blocking"])
        if row["unscored_blocking"][status]
    ]
    return {"total": sum(g["n"] for g in groups), "groups": groups}
