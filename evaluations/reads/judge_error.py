"""A model check's judge measured against a random sample of human labels: its bias (its pass
rate minus the people's, on the same results), what its errors go with (the output's length),
and the check's pass rate corrected for that error with PPI++ (`evaluations.stats.ppi_rate`),
beside the judge-only and the labels-only rates. Only labels of the calibration sample count
(`LabelSource.SAMPLE`): the ranked queue chooses disagreements first, which would bias the
correction. docs/checks.md, "Correcting the judge with labels"."""

from dataclasses import dataclass

from scipy.stats import pearsonr

from evaluations.checks.base import as_text
from evaluations.choices import CheckStatus, LabelSource
from evaluations.models import CheckResult
from evaluations.reads.calibration import human_passed, judge_passed
from evaluations.stats import Corrected, ppi_rate

MIN_SAMPLE = 10  # sample labels before a corrected rate is shown
MIN_FOR_CORRELATES = 20  # ... and before what the errors go with is


@dataclass(frozen=True)
class JudgeError:
    """What a calibration sample says of the judge: `sample` labels, `bias` (judge minus
    people on them), `lenient` and `strict` (judge pass where people fail, and the reverse),
    `corrected` (PPI++, or None with `why`), `length` ((r, p) of error against output length,
    or None)."""

    sample: int
    bias: float | None
    lenient: int
    strict: int
    corrected: Corrected | None
    why: str
    length: tuple[float, float] | None


def judge_error(check, labels) -> JudgeError:
    """The judge of `check` against the sample labels among `labels` (the calibration page's,
    given under the current judging configuration) of `check`'s own results. Two queries."""
    current = check.calibration_key
    sampled: dict[int, tuple[bool, bool]] = {}
    for label in labels:
        result = label.check_result
        if (
            getattr(label, "source", None) == LabelSource.SAMPLE
            and label.calibration_key == current
            and result.check_config_id == check.pk
        ):
            human, judge = human_passed(label, result.threshold), judge_passed(result)
            if human is not None and judge is not None:
                sampled.setdefault(result.pk, (human, judge))
    people = [human for human, _ in sampled.values()]
    judged = [judge for _, judge in sampled.values()]
    lenient = len([1 for h, j in sampled.values() if j and not h])
    strict = len([1 for h, j in sampled.values() if h and not j])
    bias = (judged.count(True) - people.count(True)) / len(people) if people else None
    rest = [
        status == CheckStatus.PASSED
        for pk, status in CheckResult.objects.filter(
            check_config=check, status__in=(CheckStatus.PASSED, CheckStatus.FAILED)
        ).values_list("pk", "status")
        if pk not in sampled
    ]
    corrected, why = None, ""
    if len(people) < MIN_SAMPLE:
        why = (
            f"{len(people)} label(s) of a random sample; {MIN_SAMPLE} at least before a "
            "corrected rate (label with “Sample for calibration”)"
        )
    elif not rest:
        why = "every judged result is labelled: the labels' own rate is the rate"
    else:
        corrected = ppi_rate(people, judged, rest)
    return JudgeError(len(people), bias, lenient, strict, corrected, why, _length(sampled))


def _length(sampled) -> tuple[float, float] | None:
    """Pearson's r (and its p-value) of the judge's error against the output's length, over
    the sample; None with too few labels, or no spread in either."""
    if len(sampled) < MIN_FOR_CORRELATES:
        return None
    outputs = dict(
        CheckResult.objects.filter(pk__in=list(sampled)).values_list(
            "pk", "trial__transcript__output"
        )
    )
    errors = [float(h != j) for h, j in sampled.values()]
    lengths = [float(len(as_text(outputs.get(pk) or ""))) for pk in sampled]
    if len(set(errors)) < 2 or len(set(lengths)) < 2:
        return None
    found = pearsonr(lengths, errors)
    return float(found.statistic), float(found.pvalue)
