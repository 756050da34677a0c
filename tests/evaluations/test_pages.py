"""The live htmx pages: runs, a run's progress and results grid, costs."""

from datetime import date
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluations.actions.start_run import StartRun
from evaluations.models import Run
from tests.support import factories

CHECKS = [{"label": "Tools", "kind": "tools_used", "params": {}, "threshold": 1.0}]


@pytest.fixture
def finished_run(builder, django_capture_on_commit_callbacks):
    version = factories.agent_version(callable_path="tests.support.agents_under_test.flaky")
    dataset_version = factories.dataset_version(
        cases=[("alternating", "q", {"expected_tools": [{"name": "kb.search"}]})], checks=CHECKS
    )
    with django_capture_on_commit_callbacks(execute=True):
        run = StartRun(
            acting_user=builder,
            agent_version=version,
            dataset_version=dataset_version,
            repetitions=2,
        ).execute()
    return run


def login(client, user, password):
    client.login(username=user.username, password=password)
    return client


def test_run_page_shows_the_grid_with_flaky_marks(client, builder, password, finished_run):
    page = login(client, builder, password).get(f"/runs/{finished_run.pk}/").content.decode()
    assert "alternating" in page and "flaky" in page and "Tools" in page


def test_progress_partial_answers_htmx_polls(client, builder, password, finished_run):
    Run.objects.filter(pk=finished_run.pk).update(status="running", trials_done=1)
    response = login(client, builder, password).get(
        f"/runs/{finished_run.pk}/?part=progress", HTTP_HX_REQUEST="true"
    )
    body = response.content.decode()
    assert "<html" not in body and "1/2" in body and 'hx-trigger="every 2s"' in body


def test_the_list_and_its_refreshed_piece_vary_on_hx_request(client, builder, password):
    """The run list refreshes its table by htmx at the page's own URL: a browser that kept
    the piece under that URL showed it alone on Back (no header, no form). Both say they
    vary on HX-Request."""
    login(client, builder, password)
    page, piece = client.get("/runs/"), client.get("/runs/", HTTP_HX_REQUEST="true")
    assert "<html" in page.content.decode() and "<html" not in piece.content.decode()
    for response in (page, piece):
        assert "HX-Request" in response["Vary"]


def test_outsider_sees_no_runs(client, outsider, password, finished_run):
    client = login(client, outsider, password)
    body = client.get("/runs/").content.decode()
    assert "You see no runs because your roles cover no agent" in body  # not "No runs yet"
    assert f"/runs/{finished_run.pk}/" not in body
    assert client.get(f"/runs/{finished_run.pk}/").status_code == 404


def test_pages_need_a_login(client, finished_run):
    assert client.get("/runs/").status_code == 302


def _queries(client, url):
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx)


def test_run_list_and_grid_keep_a_constant_number_of_queries(
    client, builder, password, django_capture_on_commit_callbacks
):
    client = login(client, builder, password)
    version = factories.agent_version(callable_path="tests.support.agents_under_test.echo")

    def add_run(n_cases):
        dv = factories.dataset_version(
            factories.dataset(f"ds-{n_cases}"),
            cases=[(f"c{i}", "q", {}) for i in range(n_cases)],
            checks=CHECKS,
        )
        with django_capture_on_commit_callbacks(execute=True):
            return StartRun(
                acting_user=builder, agent_version=version, dataset_version=dv
            ).execute()

    small = add_run(2)
    client.get("/runs/")  # the first request fills the content-type cache (the start form's)
    list_small, grid_small = _queries(client, "/runs/"), _queries(client, f"/runs/{small.pk}/")
    big = add_run(12)
    add_run(3)
    assert _queries(client, "/runs/") == list_small
    assert _queries(client, f"/runs/{big.pk}/") == grid_small


def test_costs_page_separates_kinds_and_shows_price_missing(client, builder, password):
    agent = factories.agent("costly")
    factories.cost_line(
        kind="agent",
        day=date.today(),
        agent=agent,
        usd=Decimal("0.25"),
        prompt_tokens=100,
        completion_tokens=10,
    )
    factories.cost_line(
        kind="scoring", day=date.today(), agent=agent, usd=None, model="unpriced-judge"
    )
    page = login(client, builder, password).get("/costs/").content.decode()
    assert "$0.25" in page
    assert "scoring" in page and "price missing" in page
    assert '<span class="status error">1</span>' in page
    assert "<rect" in page


def test_spend_without_a_price_reads_price_missing_on_the_list_and_run_pages(
    client, builder, password, finished_run
):
    # The flaky agent reports no cost and has no price: 2 calls whose cost is unknown.
    client = login(client, builder, password)
    for url in ("/runs/", f"/runs/{finished_run.pk}/"):
        page = client.get(url).content.decode()
        assert "price missing (2 calls)" in page, url
        assert "$0.0000" not in page, url
    Run.objects.filter(pk=finished_run.pk).update(spend_usd=Decimal("0.5"), unpriced_calls=0)
    assert "$0.50" in client.get("/runs/").content.decode()


def test_a_cost_row_without_any_price_reads_price_missing(client, builder, password):
    agent = factories.agent("unpriced")
    factories.cost_line(kind="agent", day=date.today(), agent=agent, usd=None, model="m")
    page = login(client, builder, password).get("/costs/").content.decode()
    assert "price missing (1 call)" in page and "$0.0000" not in page


def test_a_finished_run_reads_spend_and_a_running_one_spend_so_far(
    client, builder, password, finished_run
):
    client = login(client, builder, password)
    page = client.get(f"/runs/{finished_run.pk}/").content.decode()
    assert '<span class="muted">spend</span>' in page and "spend so far" not in page
    Run.objects.filter(pk=finished_run.pk).update(status="running", trials_done=1)
    polled = client.get(f"/runs/{finished_run.pk}/?part=progress", HTTP_HX_REQUEST="true")
    assert '<span class="muted">spend so far</span>' in polled.content.decode()


def test_the_cost_chart_labels_todays_bar_inside_the_chart():
    from django.utils import timezone

    from evaluations.reads.cost_chart import cost_chart

    chart = cost_chart([], 30)
    today = timezone.localdate().strftime("%m-%d")
    last = chart["ticks"][-1]
    assert last["label"] == today
    # It ends at the right edge of today's bar (the last slot), within the chart's width.
    assert last["anchor"] == "end" and chart["width"] - 24 < last["x"] <= chart["width"]
    assert chart["ticks"][0]["anchor"] == "middle" and chart["ticks"][0]["x"] > 0
    assert 6 <= len(chart["ticks"]) <= 8


def test_the_costs_page_shows_todays_date_under_the_chart(client, builder, password):
    from django.utils import timezone

    today = timezone.localdate().strftime("%m-%d")
    page = login(client, builder, password).get("/costs/").content.decode()
    assert f'text-anchor="end" font-size="10" fill="#667085">{today}</text>' in page
