"""Production in the admin: each screen lists the rows of the agents a person may see, opens a
row they may see and hides one they may not, and offers no add, change or delete to anyone
(what changes production is governed, on its pages)."""

import pytest
from django.urls import reverse

from production.choices import ProposalState
from production.models import OnlineRule, RollbackProposal, TraceScore
from tests.support import factories
from tests.support.governance import grant_on
from tests.support.online import trace

SCREENS = ("trace", "onlinerule", "tracescore", "rollbackproposal")


@pytest.fixture
def rows(db):
    mine, theirs = factories.agent("mine"), factories.agent("theirs")
    out = {}
    for agent in (mine, theirs):
        version = factories.agent_version(agent)
        row = trace(agent, version, {"input": "hi", "output": "hello"})
        score = TraceScore.objects.create(
            trace=row,
            agent=agent,
            state="scored",
            completed_at=row.completed_at,
            claimed_at=row.completed_at,
        )
        rule = OnlineRule.objects.create(agent=agent)
        proposal = RollbackProposal.objects.create(
            agent=agent, from_version=version, state=ProposalState.OPEN
        )
        out[agent.slug] = {
            "trace": row,
            "tracescore": score,
            "onlinerule": rule,
            "rollbackproposal": proposal,
        }
    return out


def url(screen, obj=None):
    if obj is None:
        return reverse(f"admin:production_{screen}_changelist")
    return reverse(f"admin:production_{screen}_change", args=[obj.pk])


@pytest.mark.parametrize("screen", SCREENS)
def test_a_builder_of_one_agent_sees_its_rows_only(client, rows, screen):
    builder = grant_on(factories.user("one-builder"), "Builder", rows["mine"]["trace"].agent)
    client.force_login(builder)
    listed = client.get(url(screen))
    assert listed.status_code == 200
    assert listed.context["cl"].result_count == 1
    assert list(listed.context["cl"].result_list) == [rows["mine"][screen]]
    assert client.get(url(screen, rows["mine"][screen])).status_code == 200
    assert client.get(url(screen, rows["theirs"][screen])).status_code == 302  # "not found"


@pytest.mark.parametrize("screen", SCREENS)
def test_nobody_adds_changes_or_deletes_production_rows(client, rows, screen):
    admin = factories.user("root-admin", role="Admin")
    client.force_login(admin)
    obj = rows["mine"][screen]
    page = client.get(url(screen, obj))
    assert page.status_code == 200
    assert page.context["has_change_permission"] is False
    assert page.context["has_delete_permission"] is False
    assert client.get(reverse(f"admin:production_{screen}_add")).status_code == 403
    before = type(obj).objects.count()
    client.post(reverse(f"admin:production_{screen}_delete", args=[obj.pk]), {"post": "yes"})
    assert type(obj).objects.count() == before


def test_a_person_without_a_role_sees_no_production_screen(client, rows):
    nobody = factories.user("nobody")
    client.force_login(nobody)
    index = client.get(reverse("admin:index"))
    assert "production" not in {app["app_label"] for app in index.context["app_list"]}
    assert client.get(url("trace")).status_code == 403


def test_the_trace_screen_links_to_its_page(client, rows):
    client.force_login(factories.user("root-admin", role="Admin"))
    row = rows["mine"]["trace"]
    page = client.get(url("trace", row)).content.decode()
    assert reverse("production:trace-detail", args=[row.pk]) in page
