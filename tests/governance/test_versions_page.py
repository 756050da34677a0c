"""The nav's Publish page (/governance/versions/): the versions a user may see, where each one's
publication stands, its publish page one click away; scoped by role, filtered, and read with a
constant number of queries as versions grow ("Publish" dropped into the admin)."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.support import factories

URL = "/governance/versions/"


def rows(body):
    return body.count("<tr data-version=")


def test_the_nav_links_the_page_not_the_admin(client, builder, agent):
    client.force_login(builder)
    body = client.get("/runs/").content.decode()
    assert f'href="{URL}"' in body
    assert "/admin/agents/agentversion/" not in body


def test_a_passed_version_says_it_waits_for_a_publisher_and_links_its_page(
    client, publisher, passed_request, blocked_request
):
    client.force_login(publisher)
    body = client.get(URL).content.decode()
    assert "passed: waits for a Publisher" in body
    assert "blocked: publishable only through an Admin&#x27;s bypass" in body
    version = passed_request.agent_version
    assert f'href="/governance/versions/{version.pk}/"' in body


def test_filters_pick_the_waiting_and_the_blocked(
    client, publisher, passed_request, blocked_request
):
    client.force_login(publisher)
    waiting = client.get(URL, {"show": "waiting"}).content.decode()
    assert f'data-version="{passed_request.agent_version.pk}"' in waiting
    assert f'data-version="{blocked_request.agent_version.pk}"' not in waiting
    blocked = client.get(URL, {"show": "blocked"}).content.decode()
    assert rows(blocked) == 1 and f'data-version="{blocked_request.agent_version.pk}"' in blocked


def test_a_builder_of_one_agent_sees_only_its_versions(client, persona, agent, other_agent):
    mine, theirs = factories.agent_version(agent), factories.agent_version(other_agent)
    body = client_get(client, persona("Builder", "here"))
    assert f'data-version="{mine.pk}"' in body and f'data-version="{theirs.pk}"' not in body
    assert "not requested" in body


def test_an_outsider_is_told_which_role_is_missing(client, outsider, agent):
    factories.agent_version(agent)
    body = client_get(client, outsider)
    assert rows(body) == 0
    assert "You see no versions because your roles cover no agent" in body
    assert "/people/" in body


def test_a_live_version_is_marked_live(client, admin_user, agent):
    version = factories.agent_version(agent)
    version.state = "published"
    version.save(update_fields=["state"])
    agent.live_version = version
    agent.save(update_fields=["live_version"])
    client.force_login(admin_user)
    body = client.get(URL, {"show": "live"}).content.decode()
    assert rows(body) == 1 and '<span class="status pass">live</span>' in body


def test_queries_do_not_grow_with_versions(client, admin_user, agent, other_agent):
    client.force_login(admin_user)
    client.get(URL)  # warm the session and the permission caches

    def count(more):
        for n in range(more):
            factories.agent_version(agent if n % 2 else other_agent)
        with CaptureQueriesContext(connection) as queries:
            assert client.get(URL).status_code == 200
        return len(queries)

    assert count(3) == count(30)


def client_get(client, user):
    client.force_login(user)
    response = client.get(URL)
    assert response.status_code == 200
    return response.content.decode()
