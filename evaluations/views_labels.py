"""The labelling queue and the calibration page of a model check (issue 13, points 1 and 2).

`/labels/?dataset=<slug>` shows an Editor (global, or of the dataset) one model-check result at
a time: its input, output, contexts and the judge's reason and evidence. The Editor labels it
pass, fail or a score with a note (`LabelCheckResult`, which refuses skipped and error results)
and moves on by keyboard (templates/evaluations/labels.html: p/f/0-9, Enter); htmx swaps in the
next item. `queue(...)` is the ranking, written once as one ordered queryset: results nobody has
labelled first, then those where the judge passed but the outcome verifier failed, then checks
below their calibration floor, flaky cases, and scores nearest the threshold.

`/checks/<id>/calibration/` shows a check's Cohen's kappa with its 95 % interval, the confusion
counts, whether it may block and why not, and every label (disagreements first), each linking
to its trial page; labels given under an earlier judging configuration are listed as old.
"""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Case, Exists, F, FloatField, IntegerField, OuterRef, Value, When
from django.db.models.functions import Abs, Coalesce
from django.http import Http404
from django.shortcuts import get_object_or_404

from evaluations.actions.label_check_result import LABELLABLE, LabelCheckResult
from evaluations.calibration import (
    calibration_gate,
    calibration_of,
    human_passed,
    judge_passed,
    same_check_labels,
)
from evaluations.checks import REGISTRY
from evaluations.checks.base import ModelCheck, as_text
from evaluations.choices import CheckStatus, OutcomeVerdict
from evaluations.evidence_display import evidence_blocks, pretty
from evaluations.models import CaseResult, Check, CheckResult, Dataset, HumanLabel
from sherlock.core.errors import ActionError
from sherlock.core.hidden import visible_or_404
from sherlock.core.htmx import render_page

MODEL_KINDS = sorted(kind for kind, cls in REGISTRY.items() if issubclass(cls, ModelCheck))


def editable_datasets(user):
    """The datasets whose results `user` may label (the Editor role, global or per dataset)."""
    return Dataset.objects.for_user(user, "edit")


def queue(user, datasets):
    """The model-check results of `datasets` still to be labelled by `user`, most instructive
    first (one query; the calibration floor is looked up once per requiring check)."""
    checks = list(
        Check.objects.filter(
            dataset_version__dataset__in=datasets,
            kind__in=MODEL_KINDS,
            requires_calibration=True,
        ).select_related("dataset_version")
    )
    uncalibrated = calibration_gate(checks)
    below_floor = [c.pk for c in checks if c.label in uncalibrated]
    mine = HumanLabel.objects.filter(check_result=OuterRef("pk"), labeled_by=user)
    flaky = CaseResult.objects.filter(
        run=OuterRef("trial__run"), case=OuterRef("trial__case"), flaky=True
    )
    return (
        CheckResult.objects.filter(
            check_config__dataset_version__dataset__in=datasets,
            check_config__kind__in=MODEL_KINDS,
            status__in=LABELLABLE,
        )
        .exclude(Exists(mine))
        .annotate(
            labelled=Exists(HumanLabel.objects.filter(check_result=OuterRef("pk"))),
            false_pass=Case(
                When(
                    status=CheckStatus.PASSED,
                    trial__outcome_verdict=OutcomeVerdict.FAILED,
                    then=Value(1),
                ),
                default=Value(0),
                output_field=IntegerField(),
            ),
            below_floor=Case(
                When(check_config_id__in=below_floor, then=Value(1)),
                default=Value(0),
                output_field=IntegerField(),
            ),
            flaky=Exists(flaky),
            margin=Coalesce(
                Abs(F("score") - F("threshold")), Value(1.0), output_field=FloatField()
            ),
        )
        .order_by(
            "labelled", "-false_pass", "-below_floor", "-flaky", "margin", "-created_at", "pk"
        )
        .select_related(
            "check_config__dataset_version__dataset",
            "trial__run__agent_version__agent",
            "trial__case_version__case",
        )
    )


def _why(result):
    """Why this result is worth a label, in the ranking's words."""
    reasons = []
    if not result.labelled:
        reasons.append("nobody has labelled it")
    if result.false_pass:
        reasons.append("the judge passed it but the outcome verifier failed")
    if result.below_floor:
        reasons.append("its check is below its calibration floor")
    if result.flaky:
        reasons.append("the case is flaky")
    if result.threshold is not None and result.score is not None and result.margin <= 0.15:
        reasons.append(f"score {result.score:.2f} is near the threshold {result.threshold:.2f}")
    return reasons


def _item(result):
    """What the page shows of one result: input, output, contexts, the judge's reason and
    evidence."""
    if result is None:
        return None
    output = (result.trial.transcript or {}).get("output")
    return {
        "result": result,
        "why": _why(result),
        "input": pretty(result.trial.case_version.input),
        "output": None if output is None else as_text(output),
        "contexts": [pretty(c) for c in result.trial.case_version.contexts or []],
        "evidence": evidence_blocks(result.evidence or {}),
    }


def _datasets_for(request):
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
                ).execute()
            except ActionError as exc:
                error = str(exc)
    pending = queue(request.user, datasets)
    context = {
        "item": _item(pending.first()),
        "remaining": pending.count(),
        "error": error,
        "dataset": slug,
        "datasets": editable_datasets(request.user).order_by("slug"),
    }
    return render_page(
        request, "evaluations/labels.html", context, partial="evaluations/partials/label_item.html"
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
    labels = list(calibration_of_labels(check))
    calibration = calibration_of(check, labels)
    rows = []
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
                "old": label.calibration_key != check.calibration_key,
                "disagree": judge is not None and human is not None and judge != human,
            }
        )
    rows.sort(key=lambda r: (r["old"], not r["disagree"], -r["label"].pk))
    return render_page(
        request,
        "evaluations/calibration.html",
        {
            "check": check,
            "calibration": calibration,
            "agreement": calibration.agreement,
            "rows": rows,
            "disagreements": [r for r in rows if r["disagree"] and not r["old"]],
            "may_label": editable_datasets(request.user)
            .filter(pk=check.dataset_version.dataset_id)
            .exists(),
        },
    )


def calibration_of_labels(check):
    return same_check_labels(check).order_by("-created_at", "-pk")
