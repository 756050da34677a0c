"""The publish page: the gate checklist with every gate, and only the buttons the user may use,
each calling the same action as the API and the admin."""

import pytest

from agents.choices import VersionState
from governance.choices import BypassState
from tests.support.governance import REASON


def page(client, user, version, **headers):
    client.force_login(user)
    return client.get(f"/governance/versions/{version.pk}/", **headers)


def test_the_page_shows_every_gate_of_a_blocked_decision(client, builder, blocked_request):
    body = page(client, builder, blocked_request.agent_version).content.decode()
    for gate in ("coverage", "false_success", "budget", "case_pass_rate"):
        assert f"<td>{gate}</td>" in body
    assert "first failing gate: <strong>false_success</strong>" in body


@pytest.mark.parametrize(
    "who,shown,hidden",
    [
        ("publisher", ["<button>Publish</button>"], ["Request bypass", "Request publication"]),
        ("admin_user", ["Request bypass"], []),
        ("builder", [], ["<button>Publish</button>", "Request bypass"]),
    ],
)
def test_only_the_buttons_a_user_may_use_are_shown(
    who, shown, hidden, request, client, passed_request, blocked_request
):
    version = (passed_request if who != "admin_user" else blocked_request).agent_version
    body = page(client, request.getfixturevalue(who), version).content.decode()
    assert all(text in body for text in shown)
    assert not any(text in body for text in hidden)


def test_publishing_from_the_page_calls_the_publish_action(client, publisher, passed_request):
    version = passed_request.agent_version
    client.force_login(publisher)
    client.post(f"/governance/versions/{version.pk}/publish/", {"reason": "looks good"})
    version.refresh_from_db()
    assert version.state == VersionState.PUBLISHED


def test_a_refusal_on_the_page_is_shown_and_changes_nothing(client, publisher, blocked_request):
    version = blocked_request.agent_version
    client.force_login(publisher)
    response = client.post(f"/governance/versions/{version.pk}/publish/", follow=True)
    assert "needs an approved bypass" in response.content.decode()
    version.refresh_from_db()
    assert version.state == VersionState.DRAFT


def test_an_admin_bypasses_from_the_page(client, admin_user, blocked_request):
    version = blocked_request.agent_version
    client.force_login(admin_user)
    client.post(f"/governance/versions/{version.pk}/bypass/", {"reason": REASON})
    assert blocked_request.bypasses.get().state == BypassState.APPROVED


def test_htmx_gets_only_the_checklist(client, builder, blocked_request):
    body = page(client, builder, blocked_request.agent_version, HTTP_HX_REQUEST="true")
    assert body.content.decode().lstrip().startswith('<section id="gate"')


def test_a_version_one_may_not_see_is_not_found(client, outsider, blocked_request):
    assert page(client, outsider, blocked_request.agent_version).status_code == 404
