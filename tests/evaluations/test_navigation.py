"""The nav offers a page only to whoever could do something there: Publish to Builders,
Publishers and Admins (global or of one agent), Schedules to Editors of a dataset and Builders of
an agent, Labels to Editors; a global role costs no query, a scoped one one query per link."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.support import factories
from tests.support.governance import grant_on

pytestmark = pytest.mark.django_db

LINKS = {"Publish": ">Publish</a>", "Schedules": ">Schedules</a>", "Labels": ">Labels</a>"}


def nav_links(client, user):
    client.force_login(user)
    body = client.get("/runs/").content.decode()
    return {name for name, html in LINKS.items() if html in body}


@pytest.mark.parametrize(
    ("role", "links"),
    [
        ("Editor", {"Schedules", "Labels"}),
        ("Builder", {"Publish", "Schedules"}),
        ("Publisher", {"Publish"}),
        ("Admin", {"Publish", "Schedules", "Labels"}),
    ],
)
def test_each_global_role_is_offered_what_it_may_do(client, role, links):
    assert nav_links(client, factories.user(f"the-{role.lower()}", role=role)) == links


def test_scoped_roles_are_offered_the_pages_of_their_grants(client):
    agent, dataset = factories.agent("one-bot"), factories.dataset("one-set")
    builder, publisher, editor = (factories.user(name) for name in ("sb", "sp", "se"))
    grant_on(builder, "Builder", agent)
    grant_on(publisher, "Publisher", agent)
    grant_on(editor, "Editor", dataset)
    assert nav_links(client, builder) == {"Publish", "Schedules"}
    assert nav_links(client, publisher) == {"Publish"}
    assert nav_links(client, editor) == {"Schedules", "Labels"}
    assert nav_links(client, factories.user("nobody")) == set()


def test_a_global_role_costs_the_nav_no_query(client):
    client.force_login(factories.user("the-builder", role="Builder"))
    client.get("/runs/")
    with CaptureQueriesContext(connection) as first:
        client.get("/runs/")
    client.force_login(factories.user("the-admin", role="Admin"))
    client.get("/runs/")
    with CaptureQueriesContext(connection) as second:
        client.get("/runs/")
    guardian = [q for q in first.captured_queries if "guardian_" in q["sql"]]
    assert not guardian, guardian
    assert not [q for q in second.captured_queries if "guardian_" in q["sql"]]
