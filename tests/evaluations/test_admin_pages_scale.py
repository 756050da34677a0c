"""Admin pages at scale: no page lists every row of a big dataset version
or run, and none costs more queries as rows grow. What they cost in milliseconds at 10,000
cases and 100,000 trials is measured by `bench/pages_scale.py`, not here: these tests compare
query counts at 5 and 50 rows, and read what the pages show.
"""

import re

import pytest
from django.contrib import admin
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evaluations.admin.datasets import CASES_SHOWN
from evaluations.models import Check
from tests.support import factories

TOOLS = [{"label": "Tools", "kind": "tools_used", "params": {}, "threshold": 1.0}]
CHECKS = [
    *TOOLS,
    {"label": "Fast", "kind": "latency", "params": {"max_ms": 60000}, "threshold": 1.0},
]


def queries(client, url):
    """The queries of a GET of ``url``, after a first one (the session's and content types'
    first reads are not the page's)."""
    client.get(url)
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return len(ctx)


def version_of(slug, n_cases, frozen=True):
    return factories.dataset_version(
        factories.dataset(slug),
        cases=[(f"{slug}-{i:03d}", f"question {i}", {}) for i in range(n_cases)],
        checks=CHECKS,
        frozen=frozen,
    )


def finished_run(builder, slug, n_cases, capture):
    """A finished run of `n_cases` cases and two checks, made by the engine."""
    version = factories.agent_version(
        factories.agent(f"{slug}-bot"), callable_path="tests.support.agents_under_test.echo"
    )
    return factories.start_run(builder, version, version_of(slug, n_cases), capture)


def change_url(obj):
    opts = obj._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])


@pytest.fixture
def as_admin(logged_in, admin_user):
    return logged_in(admin_user)


# --- the dataset version's page ---------------------------------------------------------------


def test_a_dataset_versions_page_shows_its_first_cases_and_links_to_all(as_admin):
    small, big = version_of("small", 5), version_of("big", 50)
    assert queries(as_admin, change_url(small)) == queries(as_admin, change_url(big))
    html = as_admin.get(change_url(big)).content.decode()
    shown = re.findall(r">(big-\d{3})<", html)
    assert shown == [f"big-{i:03d}" for i in range(CASES_SHOWN)]  # the first, by key
    assert f"The first {CASES_SHOWN} of 50 by key" in html
    listing = reverse("admin:evaluations_caseversion_changelist")
    link = f"{listing}?dataset_version__id__exact={big.pk}"
    assert f'href="{link}">All 50 cases of this version</a>' in html
    # Every check is still listed on the page (a version has a few).
    assert all(label in html for label in ("Tools", "Fast"))

    page = as_admin.get(link)
    assert page.status_code == 200 and page.context["cl"].result_count == 50
    assert "Cases of big v1" in page.content.decode()
    assert "small-000" not in page.content.decode()


def test_a_version_without_cases_says_so(as_admin):
    html = as_admin.get(change_url(version_of("empty", 0))).content.decode()
    assert "No case yet." in html


def test_the_list_of_versions_counts_cases_and_checks_apart(as_admin):
    version_of("counted", 7)  # 7 cases x 2 checks: a join of both would count 14 of each
    cl = as_admin.get(reverse("admin:evaluations_datasetversion_changelist")).context["cl"]
    (row,) = cl.result_list
    assert (row.n_cases, row.n_checks) == (7, 2)


# --- the run's page ---------------------------------------------------------------------------


def test_a_runs_page_counts_its_results_and_links_to_them(
    as_admin, builder, django_capture_on_commit_callbacks
):
    small = finished_run(builder, "small", 5, django_capture_on_commit_callbacks)
    big = finished_run(builder, "big", 50, django_capture_on_commit_callbacks)
    assert queries(as_admin, change_url(small)) == queries(as_admin, change_url(big))
    html = as_admin.get(change_url(big)).content.decode()
    assert "big-0" not in html  # no case, trial or result is listed on the page
    assert "50 trials" in html and "50 case results" in html
    links = re.findall(r'href="(/admin/evaluations/\w+/\?[^"]+)"', html.replace("&amp;", "&"))
    counted = {}
    for link in links:
        page = as_admin.get(link)
        assert page.status_code == 200, link
        counted[link] = page.context["cl"].result_count
    trials = reverse("admin:evaluations_trial_changelist")
    checks = reverse("admin:evaluations_checkresult_changelist")
    assert counted[f"{trials}?run__id__exact={big.pk}"] == 50
    assert counted[f"{checks}?trial__run__id__exact={big.pk}"] == 100  # two checks a trial
    assert f'href="{reverse("evaluations:run-detail", args=[big.pk])}"' in html


# --- the check's page -------------------------------------------------------------------------


def test_a_checks_page_does_not_offer_every_case_of_its_version(logged_in, editor):
    """The preview's case is typed by key (with the first key as the example), not chosen
    from a select of every case of the draft."""
    as_editor = logged_in(editor)
    small, big = version_of("small", 5, frozen=False), version_of("big", 50, frozen=False)
    checks = [Check.objects.get(dataset_version=v, label="Tools") for v in (small, big)]
    for url in (change_url(checks[0]), change_url(checks[1])):
        assert 'name="preview_case"' in as_editor.get(url).content.decode()  # editable
    assert queries(as_editor, change_url(checks[0])) == queries(as_editor, change_url(checks[1]))
    html = as_editor.get(change_url(checks[1])).content.decode()
    assert "big-049" not in html and 'placeholder="e.g. big-000"' in html
    add = reverse("admin:evaluations_check_add")
    assert queries(as_editor, f"{add}?dataset_version={small.pk}") == queries(
        as_editor, f"{add}?dataset_version={big.pk}"
    )


# --- every changelist -------------------------------------------------------------------------


def test_no_admin_list_costs_more_queries_with_more_rows(
    as_admin, admin_user, builder, django_capture_on_commit_callbacks
):
    finished_run(builder, "small", 5, django_capture_on_commit_callbacks)
    urls = [
        reverse(f"admin:{m._meta.app_label}_{m._meta.model_name}_changelist")
        for m in admin.site._registry
    ]
    urls = [url for url in urls if as_admin.get(url).status_code == 200]  # the Admin's lists
    assert len(urls) > 20
    before = {url: queries(as_admin, url) for url in urls}
    finished_run(builder, "big", 50, django_capture_on_commit_callbacks)
    after = {url: queries(as_admin, url) for url in urls}
    grew = {url: (before[url], after[url]) for url in urls if after[url] > before[url]}
    assert not grew


@pytest.mark.parametrize("who", ["admin_user", "builder"])
def test_an_admin_page_asks_each_permission_question_once(db, client, who, request):
    # The sidebar asks every registered model's permissions on every page (any_row): one
    # query per distinct question, not one per model and verb.
    client.force_login(request.getfixturevalue(who))
    factories.agent("asked-once")
    url = reverse("admin:evaluations_modelprice_changelist")
    client.get(url)
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    statements = [q["sql"] for q in ctx.captured_queries]
    questions = [sql for sql in statements if sql.startswith('SELECT 1 AS "a"')]  # exists()
    assert questions and len(questions) == len(set(questions))
    assert len(statements) <= 16  # 47 when each model and verb asked its own


def test_a_question_with_no_possible_row_is_no_and_asks_nothing(db, rf):
    """`none()` (what `for_user` gives an inactive user) compiles to no SQL: `any_row` answers
    False without a query instead of failing the page."""
    from agents.models import Agent
    from sherlock.core.admin import any_row

    request = rf.get("/admin/")
    with CaptureQueriesContext(connection) as ctx:
        assert any_row(request, "agents.none", Agent.objects.none) is False
        assert any_row(request, "agents.none", Agent.objects.none) is False
    assert ctx.captured_queries == []
