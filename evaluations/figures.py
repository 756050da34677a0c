"""A finished run's figures: the aggregates of its check results, computed once, stored, read.

When a run finishes (`evaluations.engine.completion.compute_case_results`, also for the runs
`ImportTrials` stores), one aggregate query over its check results, grouped by case, check and
blocking (`check_groups`), gives what its case results need; the same rows summed per check,
with the contract's totals of its trials (`evaluations.contract.db.trial_totals`), are stored
in `Run.figures` (`build`):

- ``totals``: the run's `VariantTotals` from its trials, quality included; the judge spend
  bound to no trial, which may be recorded later, stays out (`run_totals` reads it live);
- ``checks``: one row per check, in the dataset's order: id, label, mode, results, the counts
  by status, the number and sum of scores, the results that did not block (``informative``),
  and the blocking results skipped or in error with one reason each;
- ``trials_error``: trials in error.

A finished run's trials and check results do not change any more, so its page, the compare
page, the trends and the gate decision read these (`stored_totals`, `stored_check_stats`,
`stored_unscored`, `stored_checks`) instead of aggregating 400,000 rows per view (issue 16:
a run of 100,000 trials). A run without figures (still running, finished before figures
existed, built by hand) is aggregated live, by the same rules and in a constant number of
queries. Means are the database's sum of the scores over their count.
"""

from decimal import Decimal

from django.db.models import Count, F, FloatField, Max, Min, Q, Sum
from django.db.models.functions import Floor

from evaluations.choices import CheckStatus
from evaluations.contract.db import GRADER_RAN, SCORE_UNITS, trial_totals
from evaluations.contract.totals import VariantTotals

VERSION = 1
# Plain strings: compared and used as keys for every row.
STATUSES = tuple(str(status) for status in CheckStatus)
UNSCORED = (str(CheckStatus.SKIPPED), str(CheckStatus.ERROR))
RAN = frozenset(str(status) for status in GRADER_RAN)


def check_groups(run):
    """The run's check results, one row per (case, check, blocking, status): ``case_id``,
    ``check_config_id``, ``blocking``, ``status``, ``first_repetition``, ``results``,
    ``scores`` and ``score_sum`` (the results with a score, and their sum), ``units`` (the
    quality grader's scores in millionths, as `quality_totals` counts them) and ``reason`` (the
    largest reason of an unscored status). One query, a handful of aggregates per row: 400,000
    results of a run of 100,000 trials come back as about 40,000 rows."""
    from evaluations.models import CheckResult

    return list(
        CheckResult.objects.filter(trial__run=run)
        .values("check_config_id", "blocking", "status", case_id=F("trial__case_id"))
        .annotate(
            first_repetition=Min("trial__repetition"),
            results=Count("pk"),
            scores=Count("score"),
            score_sum=Sum("score"),
            units=Sum(
                Floor(F("score") * SCORE_UNITS + 0.5),
                filter=Q(check_config__quality_grader=True),
                output_field=FloatField(),
            ),
            reason=Max("reason", filter=Q(status__in=UNSCORED)),
        )
        .order_by()
    )


def build(run, groups, checks, trials_error):
    """The figures of ``run`` from its ``check_groups`` rows, ``checks`` (id -> Check) and its
    number of trials in error; two more queries (`trial_totals`)."""
    per_check = {}
    for row in groups:
        entry = per_check.get(row["check_config_id"])
        if entry is None:
            check = checks[row["check_config_id"]]
            entry = per_check[check.pk] = {
                "id": check.pk,
                "label": check.label,
                "mode": check.mode,
                "position": check.position,
                "quality_grader": check.quality_grader,
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
        status, results = row["status"], row["results"]
        entry["results"] += results
        entry[status] += results
        entry["n_scored"] += row["scores"]
        entry["score_sum"] += row["score_sum"] or 0.0
        if status in RAN:
            entry["graded"] += row["scores"]
            entry["units"] += int(row["units"] or 0)
        if not row["blocking"]:
            entry["informative"] += results
        elif status in UNSCORED:
            entry["unscored_blocking"][status] += results
            reason = row["reason"] or ""
            entry["reasons"][status] = max(entry["reasons"].get(status, ""), reason)
    ordered = sorted(per_check.values(), key=lambda c: (c["position"], c["label"]))
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
    from evaluations.contract.db import run_variant

    figures = _figures(run)
    if figures is None:
        return None
    fields = VariantTotals.__dataclass_fields__
    values = {
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
    `evaluations.views_trends.check_stats`."""
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
    rows: the shape of `evaluations.views.unscored_checks`."""
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
