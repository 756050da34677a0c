"""A finished run's results as the run page shows them: the cases x checks grid, one page at a time
and filtered in the database (`results_grid`), the check labels in their order (`check_labels`),
and the blocking results the run could not score (`unscored_checks`)."""

from typing import Any

from django.core.paginator import Paginator
from django.db.models import Count, Max
from django.db.models.fields.json import KeyTransform

from evaluations.choices import CaseStatus, CheckStatus
from evaluations.models import CaseResult, CheckResult
from evaluations.reads.figures import stored_checks, unscored_of

GRID_PAGE_SIZE = 100


GRID_SHOW = {"all": "all cases", "failed": "failed", "flaky": "flaky", "unscored": "unscored"}


def check_labels(run):
    """The run's check labels in the dataset version's order (one query)."""
    return list(
        run.dataset_version.checks.order_by("position", "label").values_list("label", flat=True)
    )


def results_grid(run, labels, show="all", check="", page_number=1):
    """One page of the cases x checks grid of a finished run, filtered by ``show``/``check``.

    Two queries whatever the run's size (the page count and the page): the filter runs in the
    database, on ``CaseResult.passed``/``flaky`` or, for one check, on its summary in
    ``CaseResult.checks`` (``{label: {status, flaky, ...}}``, docs/checks.md).
    """
    results = CaseResult.objects.filter(run=run).select_related("case").order_by("case__key")
    if check:
        # The label's summary as an alias, not as "checks__<label>__...": a label may hold "__".
        results = results.alias(_summary=KeyTransform(check, "checks"))
        if show == "failed":
            results = results.filter(_summary__status=CheckStatus.FAILED)
        elif show == "flaky":
            results = results.filter(_summary__flaky=True)
        elif show == "unscored":
            results = results.filter(_summary__status__in=(CheckStatus.SKIPPED, CheckStatus.ERROR))
        else:
            results = results.filter(checks__has_key=check)
    elif show == "failed":
        results = results.filter(status__in=(CaseStatus.FAILED, CaseStatus.FLAKY))
    elif show == "flaky":
        results = results.filter(status=CaseStatus.FLAKY)
    elif show == "unscored":
        results = results.filter(status=CaseStatus.UNSCORED)
    page = Paginator(results, GRID_PAGE_SIZE).get_page(page_number)
    rows = []
    for result in page:
        cells: list[Any] = []
        for label in labels:
            summary = result.checks.get(label)
            if summary is None:
                cells.append(None)
                continue
            statuses = ", ".join(f"{k}: {v}" for k, v in summary["statuses"].items())
            cells.append({**summary, "label": label, "title": statuses})
        rows.append(
            {
                "key": result.case.key,
                "status": result.status,
                "reason": result.reason,
                "passed": result.passed,
                "flaky": result.flaky,
                "repetitions": result.repetitions,
                "repetitions_passed": result.repetitions_passed,
                "cells": cells,
            }
        )
    return page, rows


def unscored_checks(run):
    """Blocking check results the run could not score (skipped or error: no judge configured,
    judge down, missing input), per check and status, with one reason each. A case's pass does
    not count them, so the page must say so. A finished run's come from its
    stored figures (`evaluations.reads.figures`); else one query."""
    stored = stored_checks(run)
    if stored is not None:
        return unscored_of(stored)
    rows = (
        CheckResult.objects.filter(
            trial__run=run,
            blocking=True,
            status__in=[CheckStatus.SKIPPED, CheckStatus.ERROR],
        )
        .values("check_config__label", "status")
        .annotate(n=Count("pk"), reason=Max("reason"))
        .order_by("check_config__position", "check_config__label", "status")
    )
    groups = [
        {
            "label": r["check_config__label"],
            "status": r["status"],
            "n": r["n"],
            "reason": r["reason"],
        }
        for r in rows
    ]
    return {"total": sum(g["n"] for g in groups), "groups": groups}
