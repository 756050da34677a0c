"""What the trends page and the compare page read of many runs: each check's mean score and
pass rate per run (`check_stats`), from the stored figures of finished runs and one aggregate
query for the others, so a page keeps a constant number of queries however many runs it
shows."""

from django.db.models import Avg, Count, Q

from evaluations.choices import CheckStatus
from evaluations.models import CheckResult
from evaluations.reads.figures import check_stats_of, stored_checks


def check_stats(runs):
    """``{run_id: {label: stats}}`` for the check results of ``runs``: from their stored
    figures (`evaluations.reads.figures`) for the runs that finished, and in one aggregate query for
    the others.

    ``stats`` holds ``mode``, ``results`` (every result), ``mean`` (of the results that have a
    score; None when none has), ``passed``, ``failed``, ``scored`` (informative: a score, no
    verdict), ``unscored`` (skipped or error) and ``pass_rate`` (passed / (passed + failed),
    None when no result had a verdict: an informative check has no pass rate, never 0).
    ``labels`` of the answer's checks are in their dataset order (``position``).
    """
    stats, live = {}, []
    for run in runs:
        rows = stored_checks(run)
        if rows is None:
            live.append(run.pk)
        elif rows:
            stats[run.pk] = check_stats_of(rows)
    if not live:
        return stats
    rows = (
        CheckResult.objects.filter(trial__run_id__in=live)
        .values("trial__run_id", "check_config__label", "check_config__mode")
        .annotate(
            results=Count("pk"),
            mean=Avg("score"),
            passed=Count("pk", filter=Q(status=CheckStatus.PASSED)),
            failed=Count("pk", filter=Q(status=CheckStatus.FAILED)),
            scored=Count("pk", filter=Q(status=CheckStatus.SCORED)),
            unscored=Count("pk", filter=Q(status__in=[CheckStatus.SKIPPED, CheckStatus.ERROR])),
        )
        .order_by("check_config__position", "check_config__label")
    )
    for row in rows:
        judged = row["passed"] + row["failed"]
        stats.setdefault(row["trial__run_id"], {})[row["check_config__label"]] = {
            "mode": row["check_config__mode"],
            "results": row["results"],
            "mean": row["mean"],
            "passed": row["passed"],
            "failed": row["failed"],
            "scored": row["scored"],
            "unscored": row["unscored"],
            "pass_rate": row["passed"] / judged if judged else None,
        }
    return stats
