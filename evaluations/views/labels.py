"""The labelling queue and the calibration page of a model check (points 1 and 2).

`/labels/?dataset=<slug>` shows an Editor (global, or of the dataset) one model-check result at
a time: its input, output, contexts and the judge's reason and evidence. The Editor labels it
pass, fail or a score with a note (`LabelCheckResult`, which refuses skipped and error results)
and moves on by keyboard (templates/evaluations/labels.html: p/f/0-9, Enter); htmx swaps in the
next item. `queue(...)` is the ranking, written once as one ordered queryset: results nobody has
labelled first, then those where the judge passed but the outcome verifier failed, then checks
below their calibration floor, flaky cases, and scores nearest the threshold. `?mode=sample`
draws each result at random instead, and records its label as a calibration sample's.

`/checks/<id>/calibration/` shows a check's Cohen's kappa with its 95 % interval, the confusion
counts, whether it may block and why not, the judge's bias on a random sample of labels and the
pass rate corrected for it (PPI++), and every label (disagreements first, 100 a page),
each linking to its trial page; labels given under an earlier judging configuration are listed
as old.
"""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import get_object_or_404

from evaluations.actions.label_check_result import LabelCheckResult
from evaluations.checks.base import as_text
from evaluations.choices import LabelSource
from evaluations.models import Check, CheckResult, Dataset, Run
from evaluations.reads.calibration import (
    calibration_of,
    human_passed,
    judge_passed,
    namesakes_of,
    other_labels,
    same_check_labels,
)
from evaluations.reads.evidence_display import evidence_blocks, pretty
from evaluations.reads.judge_error import judge_error
from evaluations.reads.label_queue import (
    MODEL_KINDS,
    editable_datasets,
    empty_state,
    first_in_queue,
    first_in_sample,
    reasons_to_label,
    remaining,
)
from sherlock.core.errors import ActionError
from sherlock.core.hidden import visible_or_404
from sherlock.core.htmx import render_page


def _item(result):
    """What the page shows of one result: input, output, contexts, the judge's reason and
    evidence."""
    if result is None:
        return None
    output = (result.trial.transcript or {}).get("output")
    return {
        "result": result,
        "why": reasons_to_label(result),
        "input": pretty(result.trial.case_version.input),
        "output": None if output is None else as_text(output),
        "contexts": [pretty(c) for c in result.trial.case_version.contexts or []],
        "evidence": evidence_blocks(result.evidence or {}),
    }


def _datasets_for(request):
    if request.method == "POST":  # a refused label is audited by its action
        try:
            LabelCheckResult(acting_user=request.user, check_result=None).authorize()
        except ActionError as exc:
            raise PermissionDenied(str(exc)) from None
    datasets = editable_datasets(request.user)
    if not datasets.exists():
        raise PermissionDenied("Labelling needs the Editor role (global or of a dataset).")
    slug = request.GET.get("dataset") or request.POST.get("dataset") or ""
    if slug:
        datasets = datasets.filter(slug=slug)
        if not datasets.exists():
            raise Http404("no such dataset you may label")
    return datasets, slug


@login_required
def labels(request):
    """The queue: the most instructive result first; POST labels one and shows the next."""
    datasets, slug = _datasets_for(request)
    error = None
    # "sample": one result drawn at random, for the judge's corrected pass rate (calibration).
    sample = (request.POST.get("mode") or request.GET.get("mode")) == "sample"
    # A sample of one run's results: what its judge-corrected pass rates read.
    run = _sampled_run(request, datasets) if sample else None
    if request.method == "POST":
        result = visible_or_404(
            request,
            CheckResult.objects.filter(check_config__dataset_version__dataset__in=datasets),
            pk=request.POST.get("result"),
        )
        passed, score, error = _verdict(request.POST)
        if error is None:
            try:
                LabelCheckResult(
                    acting_user=request.user,
                    check_result=result,
                    passed=passed,
                    score=score,
                    note=request.POST.get("note", ""),
                    source=LabelSource.SAMPLE if sample else LabelSource.QUEUE,
                ).execute()
            except ActionError as exc:
                error = str(exc)
    if sample:
        item = _item(first_in_sample(request.user, datasets, run=run))
    else:
        item = _item(first_in_queue(request.user, datasets))
    context = {
        "item": item,
        "empty": empty_state(request.user, datasets) if item is None else None,
        "remaining": remaining(request.user, datasets),
        "error": error,
        "dataset": slug,
        "mode": "sample" if sample else "",
        "run": run,
    }
    return render_page(
        request, "evaluations/labels.html", context, partial="evaluations/partials/label_item.html"
    )


def _sampled_run(request, datasets):
    """The run named by `run` (the sample is of its results), or None; a run of a dataset the
    person may not label, or no run at all, is a 404."""
    raw = request.POST.get("run") or request.GET.get("run")
    if not raw:
        return None
    if not str(raw).isdigit():
        raise Http404("no such run")
    return visible_or_404(
        request, Run.objects.filter(dataset_version__dataset__in=datasets), pk=int(raw)
    )


def _verdict(data):
    """(passed, score, error) from the form: verdict `pass`/`fail`, or a score in [0, 1]."""
    verdict = data.get("verdict", "")
    raw = (data.get("score") or "").strip()
    if raw:
        try:
            score = float(raw)
        except ValueError:
            return None, None, "score must be a number in [0, 1]"
        if not 0 <= score <= 1:
            return None, None, "score must be in [0, 1]"
        return None, score, None
    if verdict in ("pass", "fail"):
        return verdict == "pass", None, None
    return None, None, "choose pass (p), fail (f) or a score (0-9) before Enter"


@login_required
def calibration(request, pk):
    """A model check's calibration: kappa, its 95 % interval, the confusion counts, the rule's
    verdict and every label, disagreements first, each linking to its trial page."""
    visible = Check.objects.filter(
        dataset_version__dataset__in=Dataset.objects.for_user(request.user)
    ).select_related("dataset_version__dataset")
    check = get_object_or_404(visible, pk=pk)
    if check.kind not in MODEL_KINDS:
        raise Http404("calibration is for model checks")
    # Every label counts toward kappa, so all are read, but only the columns the tally reads;
    # the rows are shown a page at a time, their trials and cases read for that page only.
    labels = list(calibration_of_labels(check).only(*LABEL_COLUMNS))
    # Production's labels of the check's results (its traces), counted and listed too.
    labels += other_labels(namesakes_of(check))
    calibration = calibration_of(check, labels)
    rows, current_key = [], check.calibration_key
    for label in labels:
        result = label.check_result
        judge = judge_passed(result)
        human = human_passed(label, result.threshold)
        rows.append(
            {
                "label": label,
                "result": result,
                "judge": judge,
                "human": human,
                "old": label.calibration_key != current_key,
                "disagree": judge is not None and human is not None and judge != human,
            }
        )
    rows.sort(key=lambda r: (r["old"], not r["disagree"], -r["label"].pk))
    disagreements = sum(1 for r in rows if r["disagree"] and not r["old"])
    page = Paginator(rows, LABELS_PER_PAGE).get_page(request.GET.get("page"))
    shown = CheckResult.objects.select_related(
        "trial__case_version__case", "check_config__dataset_version"
    ).only(*RESULT_COLUMNS)
    results = shown.in_bulk(
        [row["result"].pk for row in page.object_list if not hasattr(row["label"], "trace_url")]
    )
    for row in page.object_list:
        if hasattr(row["label"], "trace_url"):
            continue  # a production label: its row links to its trace
        row["result"] = results[row["result"].pk]
    return render_page(
        request,
        "evaluations/calibration.html",
        {
            "check": check,
            "calibration": calibration,
            "agreement": calibration.agreement,
            "rows": page.object_list,
            "page": page,
            "disagreements": disagreements,
            # The judge against a random sample of labels, and the rate corrected for it.
            "judge_error": judge_error(check, labels),
            "may_label": editable_datasets(request.user)
            .filter(pk=check.dataset_version.dataset_id)
            .exists(),
        },
    )


# What the calibration page reads of each label (the tally's fields), and of the results of
# the labels it shows (the row's links).
LABEL_COLUMNS = [
    "passed",
    "score",
    "note",
    "source",
    "check_result__check_config",
    "calibration_key",
    "created_at",
    "labeled_by__username",
    "check_result__status",
    "check_result__score",
    "check_result__threshold",
]
RESULT_COLUMNS = [
    "status",
    "score",
    "threshold",
    "check_config__dataset_version__number",
    "trial__run_id",
    "trial__repetition",
    "trial__case_version__case__key",
]
LABELS_PER_PAGE = 100


def calibration_of_labels(check):
    return same_check_labels(check).order_by("-created_at", "-pk")
