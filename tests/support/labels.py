"""A run with model-check results to label (the labelling queue's tests, page and browser)."""

from evaluations.models import CaseResult, CheckResult, Run, Trial
from tests.support import factories

MODEL = {
    "label": "Complete",
    "kind": "custom",
    "params": {"criterion": "The answer is complete.", "anchors": "0 = no, 1 = yes"},
    "threshold": 0.5,
    "requires_calibration": True,
    "min_labels": 3,
}
SHAPE = {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}


def run_to_label(results):
    """A run with one trial per `(key, status, score, outcome, flaky)` and its results."""
    version = factories.dataset_version(
        cases=[(key, f"question {key}", {"contexts": ["ctx"]}) for key, *_ in results],
        checks=[MODEL, SHAPE],
    )
    model, shape = version.checks.order_by("position")
    run = Run.objects.create(
        agent_version=factories.agent_version(), dataset_version=version, trials_total=1
    )
    made = {}
    for cv, (key, status, score, outcome, flaky) in zip(
        version.case_versions.order_by("case__key"), sorted(results), strict=True
    ):
        trial = Trial.objects.create(
            run=run,
            case=cv.case,
            case_version=cv,
            repetition=1,
            transcript={"output": f"answer {key}"},
            outcome_verdict=outcome,
        )
        CaseResult.objects.create(run=run, case=cv.case, passed=True, flaky=flaky)
        made[key] = CheckResult.objects.create(
            trial=trial,
            check_config=model,
            status=status,
            score=score,
            threshold=0.5,
            reason=f"judge on {key}",
        )
        CheckResult.objects.create(trial=trial, check_config=shape, status="passed", score=1)
    return model, made
