"""The compare and trends pages and the navigation: content, scoping, query counts.

Two versions of one agent run on one frozen dataset version: v1 (`echo`) calls the tools each
case expects, v2 (`scripted`, given plain text) calls none, so the case that needs a tool
regresses and the tools check's pass rate falls from 1/1 to 0/1.
"""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.models import Agent
from tests.support import factories

CHECKS = [
    {"label": "Tools", "kind": "tools_used", "params": {}, "threshold": 1.0},
    {
        "label": "Shape",
        "kind": "output_type",
        "params": {"type": "text"},
        "threshold": None,
        "mode": "informative",
    },
]
NAV = ["/runs/", "/runs/compare/", "/trends/", "/costs/", "/admin/", "/api/docs/"]


def cases(n):
    return [("needs-tool", "q", {"expected_tools": [{"name": "kb.search"}]})] + [
        (f"plain-{i}", "q", {}) for i in range(n - 1)
    ]


@pytest.fixture
def two_runs(builder, django_capture_on_commit_callbacks):
    return make_runs(builder, django_capture_on_commit_callbacks, "bot", n_cases=2)


def make_runs(builder, capture, slug, n_cases):
    agent = factories.agent(slug)
    v1 = factories.agent_version(agent, callable_path="tests.support.agents_under_test.echo")
    v2 = factories.agent_version(agent, callable_path="tests.support.agents_under_test.scripted")
    dataset_version = factories.dataset_version(
        factories.dataset(f"{slug}-cases"), cases=cases(n_cases), checks=CHECKS
    )
    a = factories.start_run(builder, v1, dataset_version, capture)
    b = factories.start_run(builder, v2, dataset_version, capture)
    return a, b


def login(client, user, password):
    client.login(username=user.username, password=password)
    return client


def queries(client, url):
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return len(ctx)


def test_compare_shows_both_contracts_the_verdict_the_changes_and_the_deltas(
    client, builder, password, two_runs
):
    a, b = two_runs
    page = login(client, builder, password).get(f"/runs/compare/?a={a.pk}&b={b.pk}")
    body = page.content.decode()

    assert page.status_code == 200
    assert "bot v1" in body and "bot v2" in body
    assert '<span class="status pass">comparable</span>' in body
    assert "regressed (passed in A, fails in B)" in body and "<code>needs-tool</code>" in body
    assert "plain-0" not in body.split('id="changes"')[1].split("</div>")[0]  # unchanged
    for measure in ("useful progress", "verified tool effects", "cost per verified outcome"):
        assert measure in body
    assert "gate: coverage" in body
    deltas = body.split('id="deltas"')[1]
    # The tools check applies to the one case that expects a tool: 1/1 -> 0/1.
    assert "<td>Tools</td>" in deltas and "1.000 (1/1)" in deltas and "0.000 (0/1)" in deltas
    assert '<span class="status fail">-1.000</span>' in deltas
    assert "Shape" in deltas and "informative" in deltas and "n/a" in deltas  # no pass rate


def test_runs_on_other_dataset_versions_are_not_comparable_and_say_why(
    client, builder, password, two_runs, django_capture_on_commit_callbacks
):
    a, _ = two_runs
    other = factories.dataset_version(factories.dataset("other"), cases=cases(2), checks=CHECKS)
    c = factories.start_run(builder, a.agent_version, other, django_capture_on_commit_callbacks)

    body = login(client, builder, password).get(f"/runs/compare/?a={a.pk}&b={c.pk}")
    body = body.content.decode()

    assert "not comparable" in body and "dataset version differs" in body


def test_compare_with_live_picks_the_live_versions_latest_run_on_the_dataset(
    client, builder, password, two_runs
):
    a, b = two_runs
    client = login(client, builder, password)
    # No live version yet: the run page offers no link, and the page asks for run A.
    assert "Compare with the live version" not in client.get(f"/runs/{b.pk}/").content.decode()
    page = client.get(f"/runs/compare/?a=live&b={b.pk}").content.decode()
    assert "has no live version" in page and "<select" in page

    Agent.objects.filter(pk=a.agent_version.agent_id).update(live_version=a.agent_version)
    run_page = client.get(f"/runs/{b.pk}/").content.decode()
    assert f"/runs/compare/?a=live&amp;b={b.pk}" in run_page
    response = client.get(f"/runs/compare/?a=live&b={b.pk}")
    assert response.status_code == 302
    assert response["Location"] == f"/runs/compare/?a={a.pk}&b={b.pk}"


def test_compare_without_runs_offers_pickers_and_bad_ids_say_so(
    client, builder, password, two_runs
):
    a, b = two_runs
    client = login(client, builder, password)
    page = client.get("/runs/compare/").content.decode()
    assert page.count("<select") == 2 and f'value="{a.pk}"' in page
    # Preselected: the newest run as B, the one before as A.
    select_a, select_b = page.split('name="b"')
    assert f'value="{a.pk}" selected' in select_a and f'value="{b.pk}" selected' in select_b
    # From a comparison, "choose other runs" opens the pickers on its two runs, swapped here.
    compared = client.get(f"/runs/compare/?a={a.pk}&b={b.pk}").content.decode()
    assert f"?a={a.pk}&amp;b={b.pk}&amp;choose=1" in compared
    page = client.get(f"/runs/compare/?a={b.pk}&b={a.pk}&choose=1").content.decode()
    select_a, select_b = page.split('name="b"')
    assert f'value="{b.pk}" selected' in select_a and f'value="{a.pk}" selected' in select_b
    page = client.get(f"/runs/compare/?a=x&b={b.pk}").content.decode()
    assert "&#x27;a&#x27; must be a run id" in page
    assert client.get(f"/runs/compare/?a={a.pk}&b=999999").status_code == 404


def test_the_default_pair_is_comparable_when_one_is(
    client, builder, password, two_runs, django_capture_on_commit_callbacks
):
    """The newest run is B; A is the newest run before it on the same dataset version, not
    merely the run before it (here on another dataset: "not comparable")."""
    a, b = two_runs
    other = make_runs(builder, django_capture_on_commit_callbacks, "other", n_cases=1)[1]
    newest = factories.start_run(
        builder, b.agent_version, b.dataset_version, django_capture_on_commit_callbacks
    )
    assert other.pk < newest.pk
    page = login(client, builder, password).get("/runs/compare/").content.decode()
    select_a, select_b = page.split('name="b"')
    assert f'value="{b.pk}" selected' in select_a and f'value="{newest.pk}" selected' in select_b


def test_an_outsider_sees_no_runs_to_compare_or_trend(client, outsider, password, two_runs):
    a, b = two_runs
    client = login(client, outsider, password)
    assert client.get(f"/runs/compare/?a={a.pk}&b={b.pk}").status_code == 404
    assert client.get(f"/runs/compare/?a=live&b={b.pk}").status_code == 404
    picker = client.get("/runs/compare/").content.decode()
    assert f'value="{a.pk}"' not in picker
    assert "You see no runs because your roles cover no agent" in picker  # not "No runs yet"
    trends = client.get("/trends/?agent=bot&dataset=bot-cases").content.decode()
    assert "No completed run of bot on bot-cases" in trends and "<option>bot</option>" not in trends


def test_the_pages_need_a_login(client, two_runs):
    a, b = two_runs
    assert client.get(f"/runs/compare/?a={a.pk}&b={b.pk}").status_code == 302
    assert client.get("/trends/").status_code == 302


def test_trends_chart_and_table_mark_each_runs_version_informative_checks_included(
    client, builder, password, two_runs
):
    a, b = two_runs
    page = login(client, builder, password).get("/trends/?agent=bot&dataset=bot-cases")
    body = page.content.decode()

    assert page.status_code == 200
    assert body.count("<svg") == 2 and "<polyline" in body
    assert "#" + str(a.pk) + " v1" in body and "#" + str(b.pk) + " v2" in body  # the ticks
    table = body.split('id="trend-table"')[1]
    assert "Shape" in table and "(informative)" in table
    # The case pass rate counts the cases with a verdict: 1/1, then 0/1 (the plain case, whose
    # only blocking check does not apply to it, has none).
    assert "Tools" in table and "1.000" in table and "0.000" in table
    # ... and those without one stand beside the rate.
    assert '0.000 <span class="muted unscored-count"' in table and "(1 unscored)" in table
    assert table.index(f"#{a.pk}</a>") < table.index(f"#{b.pk}</a>")  # oldest first


def test_compare_keeps_a_constant_number_of_queries(
    client, builder, password, django_capture_on_commit_callbacks, django_assert_num_queries
):
    client = login(client, builder, password)
    small = make_runs(builder, django_capture_on_commit_callbacks, "small", n_cases=2)
    big = make_runs(builder, django_capture_on_commit_callbacks, "big", n_cases=12)

    def url(runs):
        return f"/runs/compare/?a={runs[0].pk}&b={runs[1].pk}"

    with django_assert_num_queries(queries(client, url(small))):
        assert client.get(url(big)).status_code == 200
    pickers = queries(client, "/runs/compare/")
    make_runs(builder, django_capture_on_commit_callbacks, "more", n_cases=3)
    with django_assert_num_queries(pickers):  # two more runs to pick from
        assert client.get("/runs/compare/").status_code == 200


def test_trends_keeps_a_constant_number_of_queries(
    client, builder, password, django_capture_on_commit_callbacks, django_assert_num_queries
):
    client = login(client, builder, password)
    a, b = make_runs(builder, django_capture_on_commit_callbacks, "bot", n_cases=3)
    url = "/trends/?agent=bot&dataset=bot-cases"
    two = queries(client, url)
    for version in (a.agent_version, b.agent_version, a.agent_version):
        factories.start_run(builder, version, a.dataset_version, django_capture_on_commit_callbacks)

    with django_assert_num_queries(two):
        assert client.get(url).status_code == 200


def test_costs_page_keeps_a_constant_number_of_queries(
    client, builder, password, django_assert_num_queries
):
    from datetime import date, timedelta
    from decimal import Decimal

    client = login(client, builder, password)

    def spend(slug, days):
        agent = factories.agent(slug)
        for n in range(days):
            factories.cost_line(
                kind="agent", day=date.today() - timedelta(days=n), agent=agent, usd=Decimal("1")
            )

    spend("one", 1)
    few = queries(client, "/costs/")
    spend("two", 5)
    spend("three", 9)
    with django_assert_num_queries(few):
        assert client.get("/costs/").status_code == 200


def test_the_publish_page_keeps_a_constant_number_of_queries(
    client, builder, password, two_runs, django_assert_num_queries
):
    from governance.models import PublishingPolicy, PublishRequest

    a, b = two_runs
    Agent.objects.filter(pk=a.agent_version.agent_id).update(live_version=a.agent_version)
    request = PublishRequest.objects.create(
        agent_version=b.agent_version,
        policy=PublishingPolicy.objects.create(name="p"),
        config_hash="x",
        state="blocked",
    )
    request.runs.set([b])
    client = login(client, builder, password)
    url = f"/governance/versions/{b.agent_version.pk}/"
    one = queries(client, url)
    request.runs.add(a)  # a second gate run (and its dataset) on the page

    with django_assert_num_queries(one):
        assert client.get(url).status_code == 200


@pytest.mark.parametrize("who", ["builder", "admin_user"])
def test_every_page_has_the_navigation_audit_only_for_admins(
    client, password, two_runs, who, request
):
    user = request.getfixturevalue(who)
    client = login(client, user, password)
    a, b = two_runs
    for url in (
        "/runs/",
        f"/runs/{a.pk}/",
        f"/runs/compare/?a={a.pk}&b={b.pk}",
        "/trends/?agent=bot&dataset=bot-cases",
        "/costs/",
    ):
        header = client.get(url).content.decode().split("<main>")[0]
        for link in NAV:
            assert f'href="{link}"' in header, (url, link)
        assert 'href="/governance/versions/"' in header  # publish: versions, gate links
        assert 'action="/admin/logout/"' in header and user.username in header
        assert ('href="/governance/audit/"' in header) == (who == "admin_user")


def test_the_publish_page_links_candidate_and_live(client, builder, password, two_runs):
    from governance.models import PublishingPolicy, PublishRequest

    a, b = two_runs
    Agent.objects.filter(pk=a.agent_version.agent_id).update(live_version=a.agent_version)
    policy = PublishingPolicy.objects.create(name="p")
    request = PublishRequest.objects.create(
        agent_version=b.agent_version, policy=policy, config_hash="x", state="blocked"
    )
    request.runs.set([b])

    page = login(client, builder, password).get(f"/governance/versions/{b.agent_version.pk}/")

    assert f'href="/runs/compare/?a=live&amp;b={b.pk}"' in page.content.decode()
