"""Sherlock's labelling and calibration pages at scale: the queue ranks a
bounded window of the newest results and counts up to it, the calibration page shows its labels
a page at a time; neither costs more queries with more rows. Their milliseconds at 100,000
trials are `bench/pages_scale.py`'s to measure."""

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from evaluations.models import Case, CaseVersion, CheckResult, HumanLabel, Run, Trial
from evaluations.reads import label_queue
from evaluations.views import labels as label_views
from tests.support.labels import run_to_label


def _results(n):
    return run_to_label([(f"k{i:03d}", "passed", i / max(n, 1), "", False) for i in range(n)])


def _get(client, url):
    client.get(url)  # the session's first reads are not the page's
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200, response.status_code
    return len(ctx), response.content.decode()


@pytest.fixture
def as_editor(editor):
    client = Client()
    client.force_login(editor)
    return client


@pytest.mark.parametrize("n", [5, 50])
def test_the_queue_counts_up_to_its_window_and_ranks_within_it(as_editor, monkeypatch, n):
    check, made = _results(n)
    monkeypatch.setattr(label_queue, "QUEUE_WINDOW", 20)
    _, html = _get(as_editor, "/labels/")
    if n <= 20:
        assert f"{n} to label" in html
    else:
        assert "more than 20 to label" in html
        # Ranked among the newest 20: the oldest results wait until those are labelled.
        assert "judge on k000" not in html
    assert "judge on k" in html  # an item to label either way


def _more(check, n, prefix="x"):
    """`n` more passed results of `check`, each of a new case of its run."""
    run = Run.objects.get(dataset_version=check.dataset_version)
    made = []
    for i in range(n):
        case = Case.objects.create(dataset=check.dataset_version.dataset, key=f"{prefix}{i:03d}")
        cv = CaseVersion.objects.create(dataset_version=check.dataset_version, case=case, input="q")
        trial = Trial.objects.create(run=run, case=case, case_version=cv, repetition=1)
        made.append(
            CheckResult.objects.create(
                trial=trial, check_config=check, status="passed", score=0.9, threshold=0.5
            )
        )
    return made


def test_the_queue_page_keeps_its_queries_as_results_grow(as_editor, monkeypatch):
    monkeypatch.setattr(label_queue, "QUEUE_WINDOW", 20)
    check, _ = _results(5)
    few, _ = _get(as_editor, "/labels/")
    _more(check, 45)
    many, html = _get(as_editor, "/labels/")
    assert few == many and "more than 20 to label" in html


def test_the_calibration_page_shows_its_labels_a_page_at_a_time(as_editor, editor, monkeypatch):
    monkeypatch.setattr(label_views, "LABELS_PER_PAGE", 3)
    check, made = _results(2)
    key = check.calibration_key  # labels of the check as it judges now (none "old")
    for result in made.values():
        HumanLabel.objects.create(
            check_result=result, labeled_by=editor, passed=False, calibration_key=key
        )
    url = f"/checks/{check.pk}/calibration/"
    few, _ = _get(as_editor, url)
    for result in _more(check, 6):
        HumanLabel.objects.create(
            check_result=result, labeled_by=editor, passed=False, calibration_key=key
        )
    many, first = _get(as_editor, url)
    assert few == many
    assert first.count('class="disagree') == 3 and "page 1 of 3" in first
    assert "8 disagreements" in first  # every label counts, not only the page's
    _, last = _get(as_editor, f"{url}?page=3")
    assert last.count('class="disagree') == 2 and "page 3 of 3" in last
