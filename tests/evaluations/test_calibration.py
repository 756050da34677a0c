"""Calibration that decides: Cohen's kappa with its 95 % interval, the rule (enough
labels and the interval's lower bound at the floor), the reset when the check's judging
configuration changes (old labels kept, shown as old) and refusing labels on results with no
verdict, through the action and the API."""

import pytest

from evaluations.actions.label_check_result import LabelCheckResult
from evaluations.actions.update_check import UpdateCheck
from evaluations.models import CheckResult, HumanLabel, Run, Trial
from evaluations.reads.calibration import Agreement, calibration_gate, calibration_of
from sherlock.core.errors import ActionInvalid
from tests.support import factories
from tests.support.factories import api


def test_kappa_interval_matches_a_worked_example():
    # n = 50; p_o = 35/50 = 0.7; judge passes 25/50, humans 30/50: p_e = 0.5*0.6 + 0.5*0.4
    # = 0.5; kappa = (0.7 - 0.5) / 0.5 = 0.4; SE = sqrt(0.7*0.3 / (50 * 0.25)) = 0.129615;
    # 95 %: 0.4 -/+ 1.96 * 0.129615 = [0.145954, 0.654046].
    agreement = Agreement(
        both_pass=20, both_fail=15, judge_pass_human_fail=5, judge_fail_human_pass=10
    )
    assert agreement.kappa == pytest.approx(0.4)
    assert agreement.kappa_se == pytest.approx(0.129615, abs=1e-6)
    low, high = agreement.kappa95
    assert low == pytest.approx(0.145954, abs=1e-5) and high == pytest.approx(0.654046, abs=1e-5)


def test_perfect_agreement_has_a_point_interval_and_none_without_labels():
    assert Agreement(both_pass=3, both_fail=3).kappa95 == (1.0, 1.0)
    assert Agreement().kappa95 is None and Agreement().kappa_se is None


def _labelled(editor, verdicts, min_labels=4, floor=0.6, frozen=False):
    """A model check on a draft with one judged result per (judge, human) pair, each labelled
    by `editor`."""
    version = factories.dataset_version(
        cases=[(f"c{i}", "q", {}) for i in range(len(verdicts))],
        checks=[
            {
                "label": "Complete",
                "kind": "custom",
                "params": {"criterion": "The answer is complete.", "anchors": "0 = no, 1 = yes"},
                "threshold": 0.5,
                "requires_calibration": True,
                "min_labels": min_labels,
                "kappa_floor": floor,
            }
        ],
        frozen=frozen,
    )
    check = version.checks.get()
    run = Run.objects.create(
        agent_version=factories.agent_version(),
        dataset_version=version,
        trials_total=len(verdicts),
    )
    for cv, (judge, human) in zip(version.case_versions.all(), verdicts, strict=True):
        trial = Trial.objects.create(run=run, case=cv.case, case_version=cv, repetition=1)
        result = CheckResult.objects.create(
            trial=trial,
            check_config=check,
            score=1.0 if judge else 0.0,
            status="passed" if judge else "failed",
            threshold=0.5,
        )
        LabelCheckResult(acting_user=editor, check_result=result, passed=human).execute()
    return check


AGREE = [(True, True), (False, False)]


def test_a_check_with_enough_agreeing_labels_is_calibrated(editor):
    check = _labelled(editor, AGREE * 3)
    assert calibration_gate([check]) == {}


def test_too_few_labels_keep_it_informative(editor):
    check = _labelled(editor, AGREE * 1, min_labels=4)
    assert "2/4 human labels" in calibration_gate([check])["Complete"]


def test_a_kappa_above_the_floor_with_a_low_lower_bound_is_not_calibrated(editor):
    # 9 agree, 1 disagrees: kappa 0.8 >= 0.6, but with n = 10 the lower bound is 0.43.
    verdicts = AGREE * 4 + [(True, True), (True, False)]
    check = _labelled(editor, verdicts, min_labels=4, floor=0.6)
    calibration = calibration_of(check)
    assert calibration.agreement.kappa == pytest.approx(0.8)
    assert calibration.agreement.kappa95[0] < 0.6
    assert not calibration.calibrated and "lower bound" in calibration.reason


@pytest.mark.parametrize(
    "change",
    [
        {"params": {"criterion": "Every step is answered.", "anchors": "0 = no, 1 = yes"}},
        {"params": {"criterion": "The answer is complete.", "anchors": "0 = none, 1 = all"}},
        {"judge_model": "other-judge"},
    ],
    ids=["criterion", "rubric", "judge_model"],
)
def test_changing_how_it_judges_returns_it_to_uncalibrated_and_keeps_old_labels(editor, change):
    check = _labelled(editor, AGREE * 3)
    assert calibration_of(check).calibrated
    UpdateCheck(acting_user=editor, check=check, **change).execute()
    check.refresh_from_db()
    calibration = calibration_of(check)
    assert not calibration.calibrated and calibration.old_labels == 6
    assert "0/4 human labels (6 from an earlier version)" in calibration.reason
    assert HumanLabel.objects.count() == 6


def test_changing_the_threshold_keeps_the_calibration(editor):
    check = _labelled(editor, AGREE * 3)
    UpdateCheck(acting_user=editor, check=check, threshold=0.7).execute()
    check.refresh_from_db()
    assert calibration_of(check).calibrated


@pytest.mark.parametrize("status", ["skipped", "error"])
def test_a_result_without_verdict_cannot_be_labelled(editor, status):
    check = _labelled(editor, [(True, True)])
    first = CheckResult.objects.get()
    trial = Trial.objects.create(
        run=first.trial.run,
        case=first.trial.case,
        case_version=first.trial.case_version,
        repetition=2,
    )
    result = CheckResult.objects.create(trial=trial, check_config=check, status=status)
    with pytest.raises(ActionInvalid) as refused:
        LabelCheckResult(acting_user=editor, check_result=result, passed=True).execute()
    assert refused.value.field == "check_result"
    response = api(editor).post(
        f"/api/v1/check-results/{result.pk}/label/", {"passed": True}, format="json"
    )
    assert response.status_code == 400 and response.json()["field"] == "check_result"
    assert "skipped" in response.json()["detail"] or "error" in response.json()["detail"]
    assert not HumanLabel.objects.filter(check_result=result).exists()


def test_the_api_shows_the_interval_and_old_labels(editor):
    check = _labelled(editor, AGREE * 3)
    body = api(editor).get(f"/api/v1/checks/{check.pk}/calibration/").json()
    assert body["kappa95"] == [1.0, 1.0] and body["old_labels"] == 0 and body["calibrated"]
