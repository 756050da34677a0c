"""The checks API: params validated on save (400 naming the field, nothing saved), writes only
through actions (403 / 409), the preview endpoint, hand labels and calibration."""

import pytest

from evaluations.models import Check, CheckResult, Run, Trial
from governance.models import AuditEntry
from tests.support import factories
from tests.support.factories import api


@pytest.fixture
def draft(db):
    return factories.dataset_version(cases=[("c1", "hello", {})], frozen=False)


GOOD = {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}


def test_editor_adds_a_check_with_valid_params(editor, draft):
    response = api(editor).post(
        "/api/v1/checks/", {**GOOD, "dataset_version": draft.pk}, format="json"
    )
    assert response.status_code == 201, response.json()
    check = Check.objects.get(dataset_version=draft)
    assert check.params["type"] == "text"  # defaults are filled in
    assert AuditEntry.objects.filter(
        action="evaluations.check.create", target_id=str(check.pk)
    ).exists()


def test_bad_params_answer_400_naming_the_field_and_save_nothing(editor, draft):
    body = {**GOOD, "params": {"type": "json_schema"}, "dataset_version": draft.pk}
    response = api(editor).post("/api/v1/checks/", body, format="json")
    assert response.status_code == 400
    assert response.json()["field"] == "params"
    assert "schema" in response.json()["detail"]
    assert not Check.objects.exists()
    assert not AuditEntry.objects.filter(action="evaluations.check.create").exists()


def test_a_misspelt_param_is_an_error_not_ignored(editor, draft):
    body = {**GOOD, "params": {"tpye": "text"}, "dataset_version": draft.pk}
    response = api(editor).post("/api/v1/checks/", body, format="json")
    assert response.status_code == 400 and "tpye" in response.json()["detail"]


def test_duplicate_label_is_refused(editor, draft):
    client = api(editor)
    assert (
        client.post(
            "/api/v1/checks/", {**GOOD, "dataset_version": draft.pk}, format="json"
        ).status_code
        == 201
    )
    response = client.post("/api/v1/checks/", {**GOOD, "dataset_version": draft.pk}, format="json")
    assert response.status_code == 400 and response.json()["field"] == "label"


def test_threshold_outside_the_unit_interval_is_refused(editor, draft):
    body = {**GOOD, "threshold": 1.5, "dataset_version": draft.pk}
    response = api(editor).post("/api/v1/checks/", body, format="json")
    assert response.status_code == 400
    assert not Check.objects.exists()


def test_builder_cannot_change_checks(builder, draft):
    response = api(builder).post(
        "/api/v1/checks/", {**GOOD, "dataset_version": draft.pk}, format="json"
    )
    assert response.status_code == 403
    assert not Check.objects.exists()


def test_outsider_does_not_see_the_dataset(outsider, draft):
    hidden = api(outsider).post(
        "/api/v1/checks/", {**GOOD, "dataset_version": draft.pk}, format="json"
    )
    missing = api(outsider).post(
        "/api/v1/checks/", {**GOOD, "dataset_version": draft.pk + 1000}, format="json"
    )
    # A hidden version answers as a missing one does: the answer tells them apart by nothing.
    assert hidden.status_code == missing.status_code == 400
    assert hidden.json()["field"] == missing.json()["field"] == "dataset_version"
    assert hidden.json()["detail"].replace(str(draft.pk), "") == missing.json()["detail"].replace(
        str(draft.pk + 1000), ""
    )
    entry = AuditEntry.objects.filter(action="evaluations.datasetversion.refused").first()
    assert entry is not None and entry.actor_id == outsider.pk
    assert api(outsider).get("/api/v1/checks/").json()["count"] == 0


def test_frozen_versions_are_immutable(editor):
    frozen = factories.dataset_version(cases=[("c1", "x", {})], checks=[GOOD])
    check = frozen.checks.get()
    response = api(editor).patch(f"/api/v1/checks/{check.pk}/", {"threshold": 0.5}, format="json")
    assert response.status_code == 409
    check.refresh_from_db()
    assert check.threshold == 1.0


def test_update_validates_params_and_audits_before_and_after(editor, draft):
    check = Check.objects.create(dataset_version=draft, **GOOD)
    client = api(editor)
    bad = client.patch(
        f"/api/v1/checks/{check.pk}/", {"params": {"type": "table", "x": 1}}, format="json"
    )
    assert bad.status_code == 400
    ok = client.patch(f"/api/v1/checks/{check.pk}/", {"threshold": 0.5}, format="json")
    assert ok.status_code == 200
    entry = AuditEntry.objects.get(action="evaluations.check.update")
    assert entry.before["threshold"] == 1.0 and entry.after["threshold"] == 0.5


def test_case_override_with_bad_params_is_refused(editor, draft):
    Check.objects.create(dataset_version=draft, **GOOD)
    case = draft.case_versions.get()
    response = api(editor).patch(
        f"/api/v1/cases/{case.pk}/",
        {"overrides": {"Shape": {"params": {"type": "nonsense"}}}},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["field"].startswith("overrides.Shape")


def test_admin_form_rejects_bad_params_and_saves_nothing(admin_user, password, client, draft):
    client.login(username=admin_user.username, password=password)
    response = client.post(
        "/admin/evaluations/check/add/",
        {
            "dataset_version": draft.pk,
            "label": "Shape",
            "kind": "output_type",
            "params": '{"type": "json_schema"}',
            "threshold": "1",
            "mode": "blocking",
            "min_labels": 20,
            "kappa_floor": 0.6,
            "position": 0,
        },
    )
    assert response.status_code == 200  # the form again, with the error
    assert "schema" in response.content.decode()
    assert not Check.objects.exists()


def test_preview_scores_a_check_without_saving(editor):
    response = api(editor).post(
        "/api/v1/checks/preview/",
        {
            "kind": "tools_used",
            "params": {"tools": [{"name": "email.send"}], "forbidden": True},
            "transcript": {"output": "hi", "tool_calls": [{"name": "email.send", "arguments": {}}]},
            "threshold": 1.0,
        },
        format="json",
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["score"] == 0.0 and body["status"] == "failed"
    assert body["reason"] and "evidence" in body
    assert not Check.objects.exists()


def test_preview_without_threshold_is_scored(editor):
    body = (
        api(editor)
        .post(
            "/api/v1/checks/preview/",
            {"kind": "output_type", "params": {"type": "json"}, "transcript": {"output": "{}"}},
            format="json",
        )
        .json()
    )
    assert (body["score"], body["status"]) == (1.0, "scored")


def test_preview_with_bad_params_answers_400_with_the_field(editor):
    response = api(editor).post(
        "/api/v1/checks/preview/",
        {"kind": "latency", "params": {"max_ms": "fast"}, "transcript": {}},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["field"] == "params.max_ms"


def test_preview_of_a_model_check_without_a_judge_is_skipped(editor, settings):
    settings.SHERLOCK_JUDGE_BASE_URL = ""
    body = (
        api(editor)
        .post(
            "/api/v1/checks/preview/",
            {"kind": "completeness", "case": {"input": "q"}, "transcript": {"output": "a"}},
            format="json",
        )
        .json()
    )
    assert body["status"] == "skipped" and "judge" in body["reason"]


def _results(n_labels, agree=True):
    """A model check with `n_labels` judged results, each labelled by a human."""
    version = factories.dataset_version(
        cases=[(f"c{i}", "q", {}) for i in range(n_labels)],
        checks=[
            {
                "label": "Complete",
                "kind": "completeness",
                "params": {},
                "threshold": 0.5,
                "requires_calibration": True,
                "min_labels": 4,
            }
        ],
    )
    check = version.checks.get()
    run = Run.objects.create(
        agent_version=factories.agent_version(), dataset_version=version, trials_total=n_labels
    )
    results = []
    for i, cv in enumerate(version.case_versions.all()):
        trial = Trial.objects.create(run=run, case=cv.case, case_version=cv, repetition=1)
        judge_passed = i % 2 == 0
        results.append(
            (
                CheckResult.objects.create(
                    trial=trial,
                    check_config=check,
                    score=1.0 if judge_passed else 0.0,
                    status="passed" if judge_passed else "failed",
                    threshold=0.5,
                ),
                judge_passed if agree else not judge_passed,
            )
        )
    return check, results


def test_editor_labels_results_and_sees_kappa(editor):
    check, results = _results(4)
    client = api(editor)
    for result, human in results:
        response = client.post(
            f"/api/v1/check-results/{result.pk}/label/", {"passed": human}, format="json"
        )
        assert response.status_code == 201
    body = client.get(f"/api/v1/checks/{check.pk}/calibration/").json()
    assert body["n"] == 4 and body["kappa"] == 1.0 and body["calibrated"]
    assert body["confusion"] == {
        "both_pass": 2,
        "both_fail": 2,
        "judge_pass_human_fail": 0,
        "judge_fail_human_pass": 0,
    }


def test_disagreeing_labels_keep_the_check_informative(editor):
    check, results = _results(4, agree=False)
    for result, human in results:
        api(editor).post(
            f"/api/v1/check-results/{result.pk}/label/", {"passed": human}, format="json"
        )
    body = api(editor).get(f"/api/v1/checks/{check.pk}/calibration/").json()
    assert body["kappa"] == -1.0 and not body["calibrated"]
    assert "below the floor" in body["reason"]


def test_too_few_labels_keep_the_check_informative(editor):
    check, results = _results(2)
    body = api(editor).get(f"/api/v1/checks/{check.pk}/calibration/").json()
    assert not body["calibrated"] and "0/4 human labels" in body["reason"]


def test_builder_cannot_label_results(builder):
    _, results = _results(1)
    response = api(builder).post(
        f"/api/v1/check-results/{results[0][0].pk}/label/", {"passed": True}, format="json"
    )
    assert response.status_code == 403


@pytest.mark.parametrize("params", [[1], "text", 5])
def test_params_that_are_not_an_object_answer_400(editor, draft, params):
    body = {**GOOD, "params": params, "dataset_version": draft.pk}
    response = api(editor).post("/api/v1/checks/", body, format="json")
    assert response.status_code == 400 and response.json()["field"] == "params"
    assert not Check.objects.exists()


PREVIEW = {"kind": "output_type", "params": {"type": "json"}, "transcript": {"output": "{}"}}


def test_an_outsider_cannot_spend_judge_money_on_previews_and_the_refusal_is_audited(outsider):
    response = api(outsider).post("/api/v1/checks/preview/", PREVIEW, format="json")
    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"
    refusal = AuditEntry.objects.get(action="evaluations.check.refused")
    assert refusal.actor_id == outsider.pk and refusal.request_id
    assert refusal.after == {"verb": "preview", "code": "permission_denied"}
    assert refusal.reason == "You may not preview checks (no dataset role)."


def test_an_editors_preview_writes_no_refusal(editor):
    assert api(editor).post("/api/v1/checks/preview/", PREVIEW, format="json").status_code == 200
    assert not AuditEntry.objects.filter(action="evaluations.check.refused").exists()
