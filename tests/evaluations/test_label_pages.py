"""The labelling queue and the calibration page: who may label, the ranking, the
label saved through the action (skipped and error refused with a message), constant queries."""

import pytest
from django.test import Client

from evaluations.models import CheckResult, HumanLabel, Run, Trial
from evaluations.reads.label_queue import queue
from tests.support import factories
from tests.support.labels import run_to_label as _run


def _client(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def results(db):
    return _run(
        [
            ("a-far", "passed", 1.0, "", False),
            ("b-near", "failed", 0.45, "", False),
            ("c-flaky", "passed", 0.9, "", True),
            ("d-false-pass", "passed", 1.0, "failed", False),
            ("e-skipped", "skipped", None, "", False),
            ("f-error", "error", None, "", False),
        ]
    )


def test_the_queue_ranks_what_a_label_teaches_most_first(results, editor):
    check, made = results
    ranked = [r.trial.case_version.case.key for r in queue(editor, [check.dataset_version.dataset])]
    # The check is below its floor (no labels), so that ties; then false pass, flaky, margin.
    assert ranked == ["d-false-pass", "c-flaky", "b-near", "a-far"]
    HumanLabel.objects.create(check_result=made["d-false-pass"], passed=False)
    ranked = [r.trial.case_version.case.key for r in queue(editor, [check.dataset_version.dataset])]
    assert ranked[-1] == "d-false-pass"  # labelled by someone else: after the unlabelled


def test_the_queue_is_one_query_plus_the_calibration_lookup(results, editor):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    check, _ = results
    with CaptureQueriesContext(connection) as few:
        list(queue(editor, [check.dataset_version.dataset]))
    from evaluations.models import Case, CaseVersion

    run = Run.objects.get()
    for i in range(12):
        case = Case.objects.create(dataset=check.dataset_version.dataset, key=f"x{i}")
        cv = CaseVersion.objects.create(dataset_version=check.dataset_version, case=case, input="q")
        trial = Trial.objects.create(run=run, case=case, case_version=cv, repetition=1)
        CheckResult.objects.create(trial=trial, check_config=check, status="passed", score=0.6)
    with CaptureQueriesContext(connection) as many:
        list(queue(editor, [check.dataset_version.dataset]))
    assert len(few) == len(many)


def test_editor_labels_by_the_page_and_gets_the_next_item(results, editor):
    check, made = results
    client = _client(editor)
    page = client.get("/labels/")
    assert page.status_code == 200 and b"judge on d-false-pass" in page.content
    assert b"question d-false-pass" in page.content and b"answer d-false-pass" in page.content
    response = client.post(
        "/labels/",
        {"result": made["d-false-pass"].pk, "verdict": "fail", "note": "it did not"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200 and b"judge on c-flaky" in response.content
    label = HumanLabel.objects.get()
    assert label.passed is False and label.note == "it did not" and label.labeled_by == editor
    assert label.calibration_key == check.calibration_key


def test_a_score_label_is_saved_as_a_score(results, editor):
    _, made = results
    _client(editor).post("/labels/", {"result": made["b-near"].pk, "score": "0.7"})
    assert HumanLabel.objects.get().score == 0.7


@pytest.mark.parametrize("key", ["e-skipped", "f-error"])
def test_the_page_refuses_a_result_without_verdict_with_a_message(results, editor, key):
    _, made = results
    response = _client(editor).post("/labels/", {"result": made[key].pk, "verdict": "pass"})
    assert (
        response.status_code == 200 and b"only scored results can be labelled" in response.content
    )
    assert not HumanLabel.objects.exists()


def test_no_verdict_is_a_message_not_a_label(results, editor):
    _, made = results
    response = _client(editor).post("/labels/", {"result": made["a-far"].pk})
    assert b"choose pass (p), fail (f) or a score" in response.content
    assert not HumanLabel.objects.exists()


def test_a_dataset_editor_may_label_its_dataset(results):
    from tests.support.governance import grant_on

    check, _ = results
    user = factories.user("dataset-editor")
    grant_on(user, "Editor", check.dataset_version.dataset)
    assert (
        _client(user).get(f"/labels/?dataset={check.dataset_version.dataset.slug}").status_code
        == 200
    )
    assert _client(user).get("/labels/?dataset=nope").status_code == 404


@pytest.mark.parametrize("persona", ["builder", "publisher", "outsider"])
def test_others_may_not_label(results, persona, request):
    user = request.getfixturevalue(persona)
    _, made = results
    client = _client(user)
    assert client.get("/labels/").status_code == 403
    assert (
        client.post("/labels/", {"result": made["a-far"].pk, "verdict": "pass"}).status_code == 403
    )
    assert not HumanLabel.objects.exists()


def test_the_nav_links_labels_for_editors_only(results, editor, builder):
    from tests.support.governance import grant_on

    check, _ = results
    dataset_editor = grant_on(
        factories.user("dataset-editor"), "Editor", check.dataset_version.dataset
    )
    assert b'href="/labels/"' in _client(editor).get("/runs/").content
    assert b'href="/labels/"' in _client(dataset_editor).get("/runs/").content
    assert b'href="/labels/"' not in _client(builder).get("/runs/").content


def test_the_calibration_page_shows_kappa_interval_and_disagreements(results, editor):
    check, made = results
    client = _client(editor)
    for key, human in (("a-far", True), ("b-near", False), ("c-flaky", False)):
        client.post("/labels/", {"result": made[key].pk, "verdict": "pass" if human else "fail"})
    page = client.get(f"/checks/{check.pk}/calibration/").content.decode()
    assert 'id="kappa"' in page and "95 % interval" in page
    assert "1 disagreement with the judge" in page
    assert f"/runs/{made['c-flaky'].trial.run_id}/cases/c-flaky/" in page


def test_the_calibration_page_is_404_for_who_cannot_see_the_dataset(results, outsider):
    check, _ = results
    assert _client(outsider).get(f"/checks/{check.pk}/calibration/").status_code == 404


def test_a_check_not_marked_for_calibration_says_so_not_that_its_mode_is_the_reason(
    results, editor
):
    check, _ = results
    client = _client(editor)
    check.requires_calibration = False
    check.save(update_fields=["requires_calibration"])
    page = client.get(f"/checks/{check.pk}/calibration/").content.decode()
    assert "it is not marked “requires calibration”" in page
    assert "its mode is blocking" not in page  # a blocking check can require calibration

    check.requires_calibration = True
    check.save(update_fields=["requires_calibration"])
    page = client.get(f"/checks/{check.pk}/calibration/").content.decode()
    assert "does not require calibration" not in page
    assert "Not calibrated: 0/3 human labels" in page


def test_a_calibrated_informative_check_is_not_said_to_block(results, editor):
    check, made = results
    client = _client(editor)
    for key, human in (("a-far", "pass"), ("b-near", "fail"), ("d-false-pass", "pass")):
        client.post("/labels/", {"result": made[key].pk, "verdict": human})
    assert "it may block" in client.get(f"/checks/{check.pk}/calibration/").content.decode()

    check.mode = "informative"
    check.save(update_fields=["mode"])
    page = client.get(f"/checks/{check.pk}/calibration/").content.decode()
    assert "Calibrated: 3 labels" in page
    assert "it may block" not in page and "it counts as its mode says, informative" in page
