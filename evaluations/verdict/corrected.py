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
    ids = [run.pk for run in runs]
    judged: dict[tuple[int, str], dict[str, int]] = {}
    for row in (
        CheckResult.objects.filter(trial__run_id__in=ids, check_config__label__in=minimums)
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
    labels = HumanLabel.objects.filter(
        check_result__trial__run_id__in=ids,
        check_result__check_config__label__in=minimums,
        source=LabelSource.SAMPLE,
    ).select_related("check_result__check_config", "check_result__trial")
    for label in labels.order_by("pk"):
        result = label.check_result
        if label.calibration_key != result.check_config.calibration_key:
            continue  # given under another judging configuration
        human, judge = human_passed(label, result.threshold), judge_passed(result)
        if human is not None and judge is not None:
            key = (result.trial.run_id, result.check_config.label)
            sampled.setdefault(key, {}).setdefault(result.pk, (human, judge))
    rows, parts, states = [], [], []
    for run in runs:
        for label, minimum in checks:
            if (run.pk, label) not in judged:
                continue  # not a check of this run's dataset version
            row = _decide(run, label, minimum, confidence, judged, sampled)
            rows.append(row)
            parts.append(row.pop("detail"))
            states.append(row["decision"])
    bound = {"checks": dict(checks), "confidence": confidence}
    label_text = POLICY_GATE_LABELS[NAME]
    if not rows:
        detail = "no check the policy names is in these runs: " + ", ".join(minimums)
        return Gate(NAME, label_text, NOT_APPLICABLE, detail, {"checks": []}, bound)
    state = FAIL if FAIL in states else INSUFFICIENT if INSUFFICIENT in states else PASS
    return Gate(NAME, label_text, state, "; ".join(parts), {"checks": rows}, bound)


def _decide(run, label, minimum, confidence, judged, sampled) -> dict[str, Any]:
    counts, pairs = judged[(run.pk, label)], sampled.get((run.pk, label), {})
    people = [human for human, _ in pairs.values()]
    labelled_judge = [judge for _, judge in pairs.values()]
    rest_passed = counts["passed"] - labelled_judge.count(True)
    rest_failed = counts["failed"] - labelled_judge.count(False)
    row: dict[str, Any] = {
        "run": run.pk,
        "check": label,
        "min": minimum,
        "sample_labels": len(people),
        "label_url": f"{reverse('evaluations:labels')}?mode=sample&run={run.pk}",
    }
    if len(people) < MIN_SAMPLE or rest_passed + rest_failed < 1:
        row.update(decision=INSUFFICIENT, rate=None, interval=None)
        row["detail"] = (
            f"run #{run.pk}, «{label}»: {len(people)} of its results labelled from a random "
            f"sample; {MIN_SAMPLE} at least before its rate can be corrected"
        )
        return row
    found = ppi_rate(
        people, labelled_judge, [True] * rest_passed + [False] * rest_failed, confidence
    )
    state = decide_on_interval(found, minimum)
    row.update(
        decision=state,
        rate=round(found.rate, 6),
        interval=[round(found.low, 6), round(found.high, 6)],
        judge_rate=round(found.judge_rate, 6),
        labels_rate=round(found.labels_rate, 6),
    )
    row["detail"] = (
        f"run #{run.pk}, «{label}»: corrected {found.rate:.3f} (judge alone "
        f"{found.judge_rate:.3f}, {len(people)} sample labels {found.labels_rate:.3f}), "
        f"{confidence:.0%} interval {found.low:.3f}–{found.high:.3f} {VERBS[state]} {minimum}"
    )
    return row
