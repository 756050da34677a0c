"""The gate "judge-corrected pass rates": for each model check a policy names
(`AppliedThresholds.corrected_checks`, a minimum each), its pass rate in each run corrected for
its judge's error by people's labels on a random sample of that run's results (PPI++,
`evaluations.stats.ppi_rate`), decided on its interval at the policy's confidence: pass when
the whole interval clears the minimum, fail when it misses it, insufficient evidence when it
straddles it or when fewer than `MIN_SAMPLE` of the run's results were labelled from the
labelling queue's sample. Only sample labels count: the ranked queue chooses disagreements
first, which would bias the correction. docs/checks.md, "Gating on the corrected rate".
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q
from django.urls import reverse

from evaluations.choices import CheckStatus, LabelSource
from evaluations.contract import NOT_APPLICABLE
from evaluations.models import CheckResult, HumanLabel
from evaluations.reads.calibration import human_passed, judge_passed
from evaluations.reads.judge_error import MIN_SAMPLE
from evaluations.stats import INSUFFICIENT, decide_on_interval, ppi_rate
from evaluations.stats.decide import FAIL, PASS, VERBS
from evaluations.verdict.model import POLICY_GATE_LABELS, Gate

NAME = "corrected_rates"


def corrected_gate(runs: list, checks: tuple, confidence: float) -> Gate:
    """The gate over `runs` for `checks` ((label, minimum), ...); two queries."""
    minimums = dict(checks)
    rows, parts, states = [], [], []
    for row in corrected_rates(runs, list(minimums), confidence):
        minimum = minimums[row["check"]]
        found = row.pop("corrected")
        if found is None:
            state = INSUFFICIENT
            detail = (
                f"run #{row['run']}, «{row['check']}»: {row['sample_labels']} of its results "
                f"labelled from a random sample; {MIN_SAMPLE} at least before its rate can be "
                "corrected"
            )
        else:
            state = decide_on_interval(found, minimum)
            detail = (
                f"run #{row['run']}, «{row['check']}»: corrected {found.rate:.3f} (judge alone "
                f"{found.judge_rate:.3f}, {row['sample_labels']} sample labels "
                f"{found.labels_rate:.3f}), {confidence:.0%} interval "
                f"{found.low:.3f}–{found.high:.3f} {VERBS[state]} {minimum}"
            )
        rows.append({**row, "min": minimum, "decision": state})
        parts.append(detail)
        states.append(state)
    bound = {"checks": minimums, "confidence": confidence}
    label_text = POLICY_GATE_LABELS[NAME]
    if not rows:
        detail = "no check the policy names is in these runs: " + ", ".join(minimums)
        return Gate(NAME, label_text, NOT_APPLICABLE, detail, {"checks": []}, bound)
    state = FAIL if FAIL in states else INSUFFICIENT if INSUFFICIENT in states else PASS
    return Gate(NAME, label_text, state, "; ".join(parts), {"checks": rows}, bound)


def corrected_rates(runs: list, labels: list[str], confidence: float) -> list[dict[str, Any]]:
    """Per run and per check among `labels` that the run has (in that order): its results the
    judge passed and failed, its sample labels, and `corrected` (a `Corrected`, or None with
    fewer than `MIN_SAMPLE` sample labels, or none of its results left unlabelled), with the
    rates and the interval as plain numbers and the link to the run's sample. Two queries."""
    ids = [run.pk for run in runs]
    judged: dict[tuple[int, str], dict[str, int]] = {}
    for row in (
        CheckResult.objects.filter(trial__run_id__in=ids, check_config__label__in=labels)
        .values("trial__run_id", "check_config__label")
        .annotate(
            passed=Count("pk", filter=Q(status=CheckStatus.PASSED)),
            failed=Count("pk", filter=Q(status=CheckStatus.FAILED)),
        )
        .order_by()
    ):
        key = (row["trial__run_id"], row["check_config__label"])
        judged[key] = {"passed": row["passed"], "failed": row["failed"]}
    sampled: dict[tuple[int, str], dict[int, tuple[bool, bool]]] = {}
    found = HumanLabel.objects.filter(
        check_result__trial__run_id__in=ids,
        check_result__check_config__label__in=labels,
        source=LabelSource.SAMPLE,
    ).select_related("check_result__check_config", "check_result__trial")
    for label in found.order_by("pk"):
        result = label.check_result
        if label.calibration_key != result.check_config.calibration_key:
            continue  # given under another judging configuration
        human, judge = human_passed(label, result.threshold), judge_passed(result)
        if human is not None and judge is not None:
            key = (result.trial.run_id, result.check_config.label)
            sampled.setdefault(key, {}).setdefault(result.pk, (human, judge))
    return [
        _corrected(run.pk, label, confidence, judged[(run.pk, label)], sampled)
        for run in runs
        for label in labels
        if (run.pk, label) in judged
    ]


def _corrected(run_id, label, confidence, counts, sampled) -> dict[str, Any]:
    pairs = sampled.get((run_id, label), {})
    people = [human for human, _ in pairs.values()]
    labelled_judge = [judge for _, judge in pairs.values()]
    rest_passed = counts["passed"] - labelled_judge.count(True)
    rest_failed = counts["failed"] - labelled_judge.count(False)
    row: dict[str, Any] = {
        "run": run_id,
        "check": label,
        "judged": counts["passed"] + counts["failed"],
        "sample_labels": len(people),
        "label_url": f"{reverse('evaluations:labels')}?mode=sample&run={run_id}",
        "corrected": None,
        "rate": None,
        "interval": None,
    }
    if len(people) < MIN_SAMPLE or rest_passed + rest_failed < 1:
        return row
    found = ppi_rate(
        people, labelled_judge, [True] * rest_passed + [False] * rest_failed, confidence
    )
    row.update(
        corrected=found,
        rate=round(found.rate, 6),
        interval=[round(found.low, 6), round(found.high, 6)],
        judge_rate=round(found.judge_rate, 6),
        labels_rate=round(found.labels_rate, 6),
    )
    return row
