"""No judge configured, said once and everywhere: saving a blocking model
check (admin, API), its preview, the estimates (the Start-a-run form on /runs/, the API, the
schedules), the run banner and the labelling queue's empty state all say the one sentence of
`evaluations.judge.setup`, with the setting to change and a link to docs/judges.md; and the
calibration page is one link from the check and from the run page."""

import pytest
from django.test import Client

from evaluations.judge.setup import NO_JUDGE, no_judge_warning
from evaluations.models import Check, CheckResult, HumanLabel, Run
from tests.support import factories
from tests.support.factories import api
from tests.support.labels import run_to_label

JUDGES_DOCS = "/admin/evaluations/check/docs/judges/"
POLITE = {"label": "Polite", "kind": "custom", "params": {"criterion": "polite"}}


@pytest.fixture(autouse=True)
def no_judge(settings):
    settings.SHERLOCK_JUDGE_BASE_URL = ""


def signed_in(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def draft(db):
    return factories.dataset_version(
        factories.dataset("answers"), cases=[("q1", "What is 2+2?", {})], frozen=False
    )


def test_the_sentence_names_the_setting_and_the_docs():
    assert "SHERLOCK_JUDGE_BASE_URL" in NO_JUDGE and "docs/judges.md" in NO_JUDGE
    assert "skipped, never passed" in NO_JUDGE
    assert no_judge_warning(["Polite"]) == (
        f"Blocking model checks cannot be scored: Polite. {NO_JUDGE}"
    )


def test_saving_a_blocking_model_check_warns_in_the_api_and_an_informative_one_does_not(
    editor, draft
):
    body = {**POLITE, "dataset_version": draft.pk}
    saved = api(editor).post("/api/v1/checks/", body, format="json").json()
    assert saved["warnings"] == [no_judge_warning(["Polite"])]
    quiet = {**body, "label": "Polite FYI", "mode": "informative"}
    assert api(editor).post("/api/v1/checks/", quiet, format="json").json()["warnings"] == []


def test_with_a_judge_configured_saving_says_nothing(settings, editor, draft):
    settings.SHERLOCK_JUDGE_BASE_URL = "http://127.0.0.1:9/v1"
    body = {**POLITE, "dataset_version": draft.pk}
    assert api(editor).post("/api/v1/checks/", body, format="json").json()["warnings"] == []


def test_saving_one_in_the_admin_warns_with_the_link(logged_in, editor, draft):
    fields = {
        "dataset_version": draft.pk,
        "label": "Polite",
        "kind": "custom",
        "criterion": "Is polite.",
        "anchor_0": "rude",
        "anchor_1": "polite",
        "params": "",
        "threshold": "0.5",
        "mode": "blocking",
        "judge_model": "",
        "min_labels": 20,
        "kappa_floor": 0.6,
        "position": 0,
    }
    response = logged_in(editor).post("/admin/evaluations/check/add/", fields, follow=True)
    html = response.content.decode()
    assert Check.objects.filter(label="Polite").exists()
    assert "Blocking model checks cannot be scored: Polite." in html
    assert "SHERLOCK_JUDGE_BASE_URL" in html and JUDGES_DOCS in html
    check = Check.objects.get(label="Polite")
    page = logged_in(editor).get(f"/admin/evaluations/check/{check.pk}/change/").content.decode()
    assert page.count(f"/checks/{check.pk}/calibration/") == 1


def test_the_preview_of_a_model_check_says_the_sentence(editor, draft):
    body = {
        "kind": "custom",
        "params": {"label": "Polite", "criterion": "polite"},
        "case": {"input": "hi"},
        "transcript": {"output": "hello"},
    }
    answer = api(editor).post("/api/v1/checks/preview/", body, format="json").json()
    assert answer["status"] == "skipped" and answer["warning"] == NO_JUDGE
    shape = {"kind": "output_type", "params": {"type": "text"}, "transcript": {"output": "x"}}
    assert api(editor).post("/api/v1/checks/preview/", shape, format="json").json()["warning"] == ""


def test_the_start_a_run_estimate_on_runs_warns_with_the_setting_and_the_link(builder):
    agent_version = factories.agent_version(factories.agent("qa-bot"))
    dataset_version = factories.dataset_version(
        cases=[("q1", "hi", {}), ("q2", "ho", {})], checks=[POLITE]
    )
    response = signed_in(builder).post(
        "/runs/start/",
        {
            "agent_version": agent_version.pk,
            "dataset_version": dataset_version.pk,
            "repetitions": 1,
            "estimate": "",
        },
    )
    html = response.content.decode()
    assert 'class="status warn start-judge-warning"' in html
    assert "Blocking model checks cannot be scored: Polite." in html
    assert "SHERLOCK_JUDGE_BASE_URL" in html and JUDGES_DOCS in html


def test_the_run_banner_says_the_sentence_and_links_calibration(builder):
    _, made = run_to_label([("a", "skipped", None, "", False)])
    run = made["a"].trial.run
    CheckResult.objects.filter(trial__run=run).update(reason="no judge configured")
    Run.objects.filter(pk=run.pk).update(status="completed", summary={"cases": 1, "passed": 1})
    html = signed_in(factories.user("viewer", role="Admin")).get(f"/runs/{run.pk}/")
    page = html.content.decode()
    assert 'id="no-judge"' in page and "SHERLOCK_JUDGE_BASE_URL" in page and JUDGES_DOCS in page
    model = made["a"].check_config
    assert page.count(f"/checks/{model.pk}/calibration/") == 1
    verdict = html.context["verdict"]
    assert not verdict.passed and verdict.gate("checks_scored").state == "fail"
    assert "judge" in {item.code for item in html.context["verdict"].missing}


def test_an_empty_queue_says_nothing_had_a_verdict_and_why(editor):
    model, _ = run_to_label([("a", "skipped", None, "", False), ("b", "error", None, "", False)])
    slug = model.dataset_version.dataset.slug
    html = signed_in(editor).get(f"/labels/?dataset={slug}").content.decode()
    assert 'data-reason="no_verdict"' in html
    assert "none of the 2 model-check results has a verdict" in html
    assert "SHERLOCK_JUDGE_BASE_URL" in html and JUDGES_DOCS in html
    assert "has your label" not in html


def test_an_empty_queue_says_everything_is_labelled_when_it_is(editor):
    model, made = run_to_label([("a", "passed", 1.0, "", False)])
    HumanLabel.objects.create(check_result=made["a"], labeled_by=editor, passed=True)
    slug = model.dataset_version.dataset.slug
    html = signed_in(editor).get(f"/labels/?dataset={slug}").content.decode()
    assert 'data-reason="all_labelled"' in html and "you labelled all 1 model-check" in html


def test_an_empty_queue_without_any_model_result_says_so(editor):
    factories.dataset_version(factories.dataset("plain"), cases=[("q", "hi", {})])
    html = signed_in(editor).get("/labels/?dataset=plain").content.decode()
    assert 'data-reason="no_results"' in html
