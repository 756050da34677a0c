"""The big admin lists' count: on PostgreSQL, a whole table above
`EstimatedCountPaginator.estimate_above` rows is counted by the planner's estimate and said
"about N"; a search, a list filter or a user's scope is counted exactly, and a page past the
real end answers without an error. The threshold is set low here, and the table analysed, so
that a few hundred trials are "big"; trials added after ANALYZE are what tell the estimate
from the exact count.
"""

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evaluations.choices import TrialStatus
from evaluations.models import Trial
from sherlock.core.admin import EstimatedCountPaginator
from tests.support import factories
from tests.support.governance import grant_on

postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the planner's estimate is PostgreSQL's"
)

TRIALS = reverse("admin:evaluations_trial_changelist")
SHAPE = [{"label": "Shape", "kind": "output_type", "params": {"type": "text"}}]


def add_trials(run, count, status=TrialStatus.COMPLETED, first_repetition=1):
    """`count` trials of the run's first case (repetitions from `first_repetition`)."""
    case_version = run.dataset_version.case_versions.select_related("case").get(case__key="a")
    Trial.objects.bulk_create(
        Trial(
            run=run,
            case=case_version.case,
            case_version=case_version,
            repetition=first_repetition + n,
            status=status,
        )
        for n in range(count)
    )


def analyze():
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE evaluations_trial")


@pytest.fixture
def run(builder, django_capture_on_commit_callbacks):
    """A finished run of two cases, and 1,200 more trials of its first case."""
    version = factories.agent_version(factories.agent("counted-bot"))
    dataset_version = factories.dataset_version(
        factories.dataset("counted"), cases=[("a", "q", {}), ("b", "q", {})], checks=SHAPE
    )
    run = factories.start_run(builder, version, dataset_version, django_capture_on_commit_callbacks)
    add_trials(run, 1200, first_repetition=100)
    return run


@pytest.fixture
def low_threshold(monkeypatch):
    monkeypatch.setattr(EstimatedCountPaginator, "estimate_above", 1000)


@pytest.fixture
def as_admin(logged_in, admin_user):
    return logged_in(admin_user)


def listed(client, url):
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return response.context["cl"], response.content.decode()


@postgresql_only
def test_an_unfiltered_big_list_shows_the_estimate_and_says_about(as_admin, run, low_threshold):
    analyze()
    estimate = Trial.objects.count()
    add_trials(run, 5, first_repetition=2000)  # after ANALYZE: counted, not estimated
    cl, html = listed(as_admin, TRIALS)
    assert cl.paginator.estimated and cl.result_count == estimate == 1202
    assert "about 1,202 trials" in html


@postgresql_only
def test_a_list_below_the_threshold_is_counted_exactly(as_admin, run):
    analyze()  # 1,202 rows, under the 10,000 of `estimate_above`
    add_trials(run, 5, first_repetition=2000)
    cl, html = listed(as_admin, TRIALS)
    assert not cl.paginator.estimated and cl.result_count == 1207
    assert "about" not in html and "1207 trials" in html


@postgresql_only
def test_a_table_analysed_empty_is_counted_exactly(as_admin, run, monkeypatch):
    # reltuples is 0 for an empty table (-1 for one never analysed): no estimate, even with
    # no threshold at all.
    monkeypatch.setattr(EstimatedCountPaginator, "estimate_above", 0)
    Trial.objects.all().delete()
    analyze()
    add_trials(run, 30)
    cl, _ = listed(as_admin, TRIALS)
    assert not cl.paginator.estimated and cl.result_count == 30


@postgresql_only
@pytest.mark.parametrize(
    ("query", "exact"),
    [("?status__exact=completed", 1207), ("?q=a", 1206), ("?run__id__exact={run}", 1207)],
    ids=["filtered", "searched", "one run"],
)
def test_a_filtered_or_searched_list_is_counted_exactly(as_admin, run, low_threshold, query, exact):
    analyze()
    add_trials(run, 5, first_repetition=2000)
    cl, html = listed(as_admin, TRIALS + query.format(run=run.pk))
    assert not cl.paginator.estimated and cl.result_count == exact
    assert "about" not in html


@postgresql_only
def test_a_list_scoped_to_a_users_agents_is_counted_exactly(
    logged_in, builder, run, low_threshold, django_capture_on_commit_callbacks
):
    # Trials in general, but the runs of one agent only: `within` filters by the user's runs.
    scoped = factories.user("scoped")
    scoped.user_permissions.add(Permission.objects.get(codename="view_trial"))
    scoped = grant_on(scoped, "Builder", run.agent_version.agent)
    unseen = factories.agent_version(factories.agent("unseen-bot"))
    factories.start_run(builder, unseen, run.dataset_version, django_capture_on_commit_callbacks)
    analyze()  # 1,204 trials, 1,202 of them the user's
    add_trials(run, 5, first_repetition=2000)
    cl, html = listed(logged_in(scoped), TRIALS)
    assert not cl.paginator.estimated and cl.result_count == 1207
    assert "about" not in html


@postgresql_only
def test_pages_past_the_real_end_of_an_estimate_answer_without_an_error(
    as_admin, run, low_threshold
):
    analyze()  # 1,202 trials: 13 pages of 100
    Trial.objects.filter(repetition__gte=1100).delete()  # 1,002 left: 11 pages
    cl, _ = listed(as_admin, TRIALS)
    assert cl.paginator.estimated and cl.paginator.num_pages == 13
    for page in (12, 13):  # past the rows, within the estimate: an empty page
        past, _ = listed(as_admin, f"{TRIALS}?p={page}")
        assert list(past.result_list) == []
    for page in (14, 10**9):  # past the estimate: the admin's usual redirect
        response = as_admin.get(f"{TRIALS}?p={page}")
        assert response.status_code == 302 and response.url == f"{TRIALS}?e=1"


def test_on_any_database_the_big_lists_still_list(as_admin, run):
    for name in ["trial", "checkresult", "caseresult", "judgecall", "costentry", "humanlabel"]:
        cl, _ = listed(as_admin, reverse(f"admin:evaluations_{name}_changelist"))
        assert not cl.paginator.estimated
    cl, html = listed(as_admin, TRIALS)
    assert cl.result_count == 1202 and "1202 trials" in html
    assert len(cl.result_list) == 100 and cl.result_list[0].pk == Trial.objects.latest("pk").pk


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's count")
def test_sqlite_counts_exactly_whatever_the_threshold(as_admin, run, monkeypatch):
    monkeypatch.setattr(EstimatedCountPaginator, "estimate_above", -10)
    cl, html = listed(as_admin, TRIALS)
    assert not cl.paginator.estimated and cl.result_count == 1202
    assert "about" not in html


def test_the_big_lists_leave_out_the_transcripts_they_do_not_show(as_admin, run):
    """A transcript may be 1 MB: the trial and check-result lists do not read it (a trial's
    page still shows it)."""
    trial = run.trials.get(case__key="b")
    for url in [TRIALS, reverse("admin:evaluations_checkresult_changelist")]:
        with CaptureQueriesContext(connection) as ctx:
            listed(as_admin, url)
        assert ctx.captured_queries and all(
            "transcript" not in q["sql"] for q in ctx.captured_queries
        )
    with CaptureQueriesContext(connection) as ctx:
        page = as_admin.get(reverse("admin:evaluations_trial_change", args=[trial.pk]))
    assert page.status_code == 200
    assert any('"evaluations_trial"."transcript"' in q["sql"] for q in ctx.captured_queries)
