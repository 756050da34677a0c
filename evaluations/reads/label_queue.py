"""The labelling queue's ranking: the model-check results a user may still label, most instructive
first (`queue`), and why each is worth a label (`reasons_to_label`); or, for calibration, one
drawn at random (`first_in_sample`)."""

import random

from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    FloatField,
    IntegerField,
    OuterRef,
    Q,
    Value,
    When,
)
from django.db.models.functions import Abs, Coalesce

from evaluations.actions.label_check_result import LABELLABLE
from evaluations.checks import MODEL_KINDS
from evaluations.choices import CheckStatus, LabelSource, OutcomeVerdict
from evaluations.judge.setup import judge_configured, no_judge_sentence
from evaluations.models import CaseResult, Check, CheckResult, Dataset, HumanLabel
from evaluations.reads.calibration import (
    calibration_gate,
)


def editable_datasets(user):
    """The datasets whose results `user` may label (the Editor role, global or per dataset)."""
    return Dataset.objects.for_user(user, "edit")


# The queue ranks the newest this many results still to be labelled by the user, not every
# one: a run of 100,000 trials has 100,000 results of each model check, and ranking them all
# took seconds (`bench/pages_scale.py`); an Editor labels a few dozen, the newest runs first.
# At 5,000, PostgreSQL's planner switched to scanning every trial (300 ms against 20 ms).
QUEUE_WINDOW = 2000


def pending(user, datasets):
    """The model-check results of `datasets` that `user` may still label, unranked."""
    mine = HumanLabel.objects.filter(check_result=OuterRef("pk"), labeled_by=user)
    return CheckResult.objects.filter(
        check_config__dataset_version__dataset__in=datasets,
        check_config__kind__in=MODEL_KINDS,
        status__in=LABELLABLE,
    ).exclude(Exists(mine))


def remaining(user, datasets):
    """How many results are left to label, counted up to the queue's window: an int, or
    "more than 2,000" past it (a count of every result would cost what the ranking did)."""
    n = pending(user, datasets).order_by()[: QUEUE_WINDOW + 1].count()
    return n if n <= QUEUE_WINDOW else f"more than {QUEUE_WINDOW:,}"


def queue(user, datasets):
    """The model-check results of `datasets` still to be labelled by `user`, most instructive
    first, among the newest `QUEUE_WINDOW` of them (two queries, the window's keys and the
    ranking; the calibration floor is looked up once per requiring check)."""
    checks = list(
        Check.objects.filter(
            dataset_version__dataset__in=datasets,
            kind__in=MODEL_KINDS,
            requires_calibration=True,
        ).select_related("dataset_version")
    )
    uncalibrated = calibration_gate(checks)
    below_floor = [c.pk for c in checks if c.label in uncalibrated]
    flaky = CaseResult.objects.filter(
        run=OuterRef("trial__run"), case=OuterRef("trial__case"), flaky=True
    )
    # The window's keys are read first (one query that walks the newest results back): given
    # them as a subquery, PostgreSQL joined all 800,000 results of the bench before it.
    window = list(
        pending(user, datasets).order_by("-pk").values_list("pk", flat=True)[:QUEUE_WINDOW]
    )
    return (
        CheckResult.objects.filter(pk__in=window)
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
        .select_related(*ITEM_RELATED)
    )


# What the page shows of a result (`evaluations.views.labels`), read with it.
ITEM_RELATED = [
    "check_config__dataset_version__dataset",
    "trial__run__agent_version__agent",
    "trial__case_version__case",
]


def first_in_queue(user, datasets):
    """The queue's first result, with what the page shows of it, or None. Ranked on the result
    rows alone, then read with its trial and case by key: ranking the window's 2,000 rows with
    every trial's transcript made PostgreSQL scan every trial."""
    top = queue(user, datasets).select_related(None).defer("evidence", "reason").first()
    if top is None:
        return None
    item = CheckResult.objects.select_related(*ITEM_RELATED).get(pk=top.pk)
    for name in ("labelled", "false_pass", "below_floor", "flaky", "margin"):
        setattr(item, name, getattr(top, name))
    return item


# The draw of a calibration sample: the operating system's randomness, no seed to predict.
DRAW = random.SystemRandom().choice


def first_in_sample(user, datasets, draw=DRAW, run=None):
    """A model-check result with a verdict drawn uniformly at random among the newest
    `QUEUE_WINDOW` of `datasets`, whatever its content, for a calibration sample; None when
    there is none. Results the user labelled through the ranked queue stay in the draw (the
    ranking chose them for their content, so leaving them out would bias the sample); those
    the user labelled from the sample do not. `run`: only that run's results (what its
    judge-corrected pass rates read)."""
    sampled = HumanLabel.objects.filter(
        check_result=OuterRef("pk"), labeled_by=user, source=LabelSource.SAMPLE
    )
    drawn = CheckResult.objects.filter(
        check_config__dataset_version__dataset__in=datasets,
        check_config__kind__in=MODEL_KINDS,
        status__in=LABELLABLE,
    )
    if run is not None:
        drawn = drawn.filter(trial__run=run)
    window = list(
        drawn.exclude(Exists(sampled)).order_by("-pk").values_list("pk", flat=True)[:QUEUE_WINDOW]
    )
    if not window:
        return None
    item = CheckResult.objects.select_related(*ITEM_RELATED).get(pk=draw(window))
    marks = {"labelled": True, "false_pass": 0, "below_floor": 0, "flaky": False}
    for name, value in {**marks, "margin": 1.0, "sampled": True}.items():
        setattr(item, name, value)  # what `reasons_to_label` and the page read
    return item


def reasons_to_label(result):
    """Why this result is worth a label, in the ranking's words."""
    if getattr(result, "sampled", False):
        return ["drawn at random for a calibration sample, whatever its content"]
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


def empty_state(user, datasets):
    """Why the queue is empty, truthfully: ``{"reason", "text", "no_judge"}``. ``reason`` is
    ``no_results`` (no model-check result at all in these datasets), ``no_verdict`` (every one
    was skipped or in error: nothing a person can agree or disagree with; with no judge
    configured, the sentence that says what to set) or ``all_labelled`` (the user labelled
    every result with a verdict). Two queries, only when the queue is empty."""

    counts = CheckResult.objects.filter(
        check_config__dataset_version__dataset__in=datasets, check_config__kind__in=MODEL_KINDS
    ).aggregate(
        total=Count("pk"),
        with_verdict=Count("pk", filter=Q(status__in=LABELLABLE)),
    )
    total, with_verdict = counts["total"], counts["with_verdict"]
    if not total:
        return {
            "reason": "no_results",
            "text": "Nothing to label yet: no run of these datasets has a model-check result "
            "(a dataset without model checks has nothing for the judge to be calibrated on).",
            "no_judge": "" if judge_configured() else no_judge_sentence(),
        }
    if not with_verdict:
        return {
            "reason": "no_verdict",
            "text": f"Nothing to label: none of the {total} model-check results has a verdict "
            "(all were skipped or in error), so there is no judgement to agree or disagree with.",
            "no_judge": "" if judge_configured() else no_judge_sentence(),
        }
    mine = HumanLabel.objects.filter(
        labeled_by=user,
        check_result__check_config__dataset_version__dataset__in=datasets,
        check_result__check_config__kind__in=MODEL_KINDS,
    ).count()
    return {
        "reason": "all_labelled",
        "text": f"Everything is labelled: you labelled all {with_verdict} model-check results "
        f"with a verdict ({mine} label{'s' if mine != 1 else ''} of yours).",
        "no_judge": "",
    }
