"""Refusals answered 404 are audited: a verb (POST, PATCH, DELETE) on an
object the user may not see answers the same 404 as one that does not exist, and leaves an
`<app>.<model>.refused` entry with the actor, the attempted verb and a short excerpt of the
target id; the API, the pages and the admin alike (`sherlock.core.hidden`). Reading a 404 (GET)
is not audited."""

import pytest

from evaluations.models import Dataset
from governance.models import AuditEntry
from tests.support import factories
from tests.support.governance import (
    PERSONAS,
    PUBLISHERS,
    api_client,
    assert_hidden_refusal,
    grant_on,
    persona_id,
)

matrix = pytest.mark.parametrize("role,scope", PERSONAS, ids=persona_id)


def sees_agent(role, scope):
    return (role, scope) != ("outsider", None) and (
        scope == "global" or (scope == "here" and role != "Editor")
    )


@matrix
def test_publishing_a_version_one_may_not_see_is_a_404_and_audited(
    role, scope, persona, passed_request, good_version
):
    user = persona(role, scope)
    response = api_client(user).post(f"/api/v1/versions/{good_version.pk}/publish/")
    if sees_agent(role, scope):
        assert response.status_code == (200 if (role, scope) in PUBLISHERS else 403)
        assert not AuditEntry.objects.filter(action="agents.agentversion.refused").exists()
        return
    assert response.status_code == 404
    entry = assert_hidden_refusal(user, "agents.agentversion", good_version.pk, "publish")
    assert entry.after["exists"] is True and entry.target_repr == str(good_version)


def test_the_404_of_a_hidden_object_is_the_404_of_a_missing_one(
    outsider, passed_request, good_version
):
    client = api_client(outsider)
    hidden = client.post(f"/api/v1/versions/{good_version.pk}/publish/")
    missing = client.post("/api/v1/versions/999999/publish/")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json()
    assert str(good_version.agent) not in hidden.content.decode()
    entries = AuditEntry.objects.filter(action="agents.agentversion.refused").order_by("sequence")
    assert [(e.target_id, e.after["exists"]) for e in entries] == [
        (str(good_version.pk), True),
        ("999999", False),
    ]


def test_reading_a_hidden_object_is_not_audited(outsider, good_version):
    response = api_client(outsider).get(f"/api/v1/versions/{good_version.pk}/")
    assert response.status_code == 404
    assert not AuditEntry.objects.filter(action__endswith=".refused").exists()


def test_a_bypass_of_a_hidden_request_is_audited(persona, blocked_request):
    user = persona("Admin", "other")
    response = api_client(user).post(
        f"/api/v1/publish-requests/{blocked_request.pk}/bypass/", {"reason": "x"}
    )
    assert response.status_code == 404
    assert_hidden_refusal(user, "governance.publishrequest", blocked_request.pk, "bypass")
    assert not blocked_request.bypasses.exists()


def test_a_hidden_object_named_in_the_body_is_audited(persona, gate_dataset):
    user = persona("Editor", "other")
    draft = gate_dataset.versions.get()
    response = api_client(user).post(
        "/api/v1/checks/",
        {"dataset_version": draft.pk, "label": "Tools 2", "kind": "tools_used"},
        format="json",
    )
    # The 400 a missing version gets: the answer does not tell hidden from missing.
    assert response.status_code == 400, response.json()
    assert response.json()["field"] == "dataset_version"
    assert_hidden_refusal(user, "evaluations.datasetversion", draft.pk, "create")
    assert draft.checks.count() == 1  # TOOLS_CHECK only


def test_deleting_a_hidden_check_is_audited(persona, gate_dataset):
    user = persona("Editor", "other")
    check = gate_dataset.versions.get().checks.get()
    response = api_client(user).delete(f"/api/v1/checks/{check.pk}/")
    assert response.status_code == 404
    assert_hidden_refusal(user, "evaluations.check", check.pk, "destroy")


def test_a_long_slug_is_cut_to_a_short_excerpt_in_the_entry_and_the_answer(editor):
    slug = "a" * 100_000
    response = api_client(editor).post(f"/api/v1/datasets/{slug}/draft/import/", [], format="json")
    assert response.status_code == 404
    assert len(response.content) < 500
    entry = AuditEntry.objects.get(action="evaluations.dataset.refused")
    assert entry.actor_id == editor.pk and entry.after["verb"] == "dataset-import"
    assert len(entry.target_id) <= 40 and entry.target_id.startswith("aaaa")
    assert len(entry.canonical()) < 2000


def test_the_entry_has_the_request_id_and_the_client_address(outsider, good_version):
    api_client(outsider).post(
        f"/api/v1/versions/{good_version.pk}/retire/", HTTP_X_REQUEST_ID="probe-1"
    )
    entry = assert_hidden_refusal(outsider, "agents.agentversion", good_version.pk, "retire")
    assert entry.request_id == "probe-1" and entry.ip == "127.0.0.1"


def test_a_page_verb_on_a_hidden_version_is_audited(client, outsider, passed_request, good_version):
    client.force_login(outsider)
    response = client.post(f"/governance/versions/{good_version.pk}/publish/", {"reason": ""})
    assert response.status_code == 404
    assert_hidden_refusal(outsider, "agents.agentversion", good_version.pk, "publish")


def test_a_page_verb_on_a_hidden_bypass_is_audited(client, persona, pending_bypass):
    user = persona("Admin", "other")
    client.force_login(user)
    response = client.post(f"/governance/bypasses/{pending_bypass.pk}/approve/")
    assert response.status_code == 404
    assert_hidden_refusal(user, "governance.bypass", pending_bypass.pk, "approve")


def test_an_admin_change_posted_for_a_hidden_agent_is_audited(client, persona, agent):
    user = persona("Builder", "other")
    client.force_login(user)
    response = client.post(
        f"/admin/agents/agent/{agent.pk}/change/", {"slug": "taken", "name": "Taken"}
    )
    assert response.status_code == 302  # the admin's "does not exist" redirect
    assert_hidden_refusal(user, "agents.agent", agent.pk, "change")
    agent.refresh_from_db()
    assert agent.name != "Taken"


def test_an_admin_delete_posted_for_a_hidden_dataset_row_is_audited_once(
    client, persona, gate_dataset
):
    user = persona("Editor", "other")
    client.force_login(user)
    check = gate_dataset.versions.get().checks.get()
    client.post(f"/admin/evaluations/check/{check.pk}/delete/", {"post": "yes"})
    assert_hidden_refusal(user, "evaluations.check", check.pk, "delete")
    assert check.dataset_version.checks.exists()


def test_an_admin_import_posted_for_a_hidden_dataset_is_audited(client, persona, other_dataset):
    user = persona("Editor", "here")
    client.force_login(user)
    client.post(f"/admin/evaluations/dataset/{other_dataset.pk}/import/", {})
    assert_hidden_refusal(user, "evaluations.dataset", other_dataset.pk, "import")
    assert Dataset.objects.get(pk=other_dataset.pk).versions.count() == 0


def test_an_admin_page_read_for_a_hidden_agent_is_not_audited(client, persona, agent):
    client.force_login(persona("Builder", "other"))
    client.get(f"/admin/agents/agent/{agent.pk}/change/")
    assert not AuditEntry.objects.filter(action__endswith=".refused").exists()


def test_a_user_with_no_role_posting_to_a_missing_url_leaves_no_entry(outsider):
    api_client(outsider).post("/api/v1/no-such-thing/")
    assert not AuditEntry.objects.filter(action__endswith=".refused").exists()


def test_the_entry_names_a_factory_made_object_too(outsider):
    agent = factories.agent("hidden-bot")
    version = factories.agent_version(agent)
    api_client(outsider).post(f"/api/v1/versions/{version.pk}/request-publication/")
    assert_hidden_refusal(outsider, "agents.agentversion", version.pk, "request_publication")


def test_an_agent_one_may_not_see_named_in_the_body_is_audited(persona, agent, other_agent):
    user = persona("Builder", "here")
    body = {"agent": "other-bot", "adapter": "python", "config": {"callable": "x.y"}}
    response = api_client(user).post("/api/v1/versions/", body, format="json")
    assert response.status_code == 400  # "does not exist", as for a missing agent
    entry = assert_hidden_refusal(user, "agents.agent", "other-bot", "create")
    assert entry.after["exists"] is True


def test_starting_a_run_of_a_version_one_may_not_see_is_audited(persona, other_agent, gate_dataset):
    user = grant_on(persona("Builder", "here"), "Editor", gate_dataset)  # sees the dataset
    hidden = factories.agent_version(other_agent)
    body = {"agent_version": hidden.pk, "dataset_version": gate_dataset.versions.get().pk}
    response = api_client(user).post("/api/v1/runs/", body, format="json")
    assert response.status_code == 400
    assert_hidden_refusal(user, "agents.agentversion", hidden.pk, "create")


def test_plain_bad_input_is_not_a_hidden_refusal(builder, agent):
    response = api_client(builder).post("/api/v1/versions/", {"agent": agent.slug}, format="json")
    assert response.status_code == 400
    assert not AuditEntry.objects.filter(action__endswith=".refused").exists()


def test_a_permission_refusal_of_an_agents_action_is_audited(publisher, agent):
    body = {"agent": agent.slug, "adapter": "python", "config": {"callable": "x.y"}}
    response = api_client(publisher).post("/api/v1/versions/", body, format="json")
    assert response.status_code == 403
    entry = AuditEntry.objects.get(action="agents.version.refused")
    assert entry.actor_id == publisher.pk and entry.target_id == str(agent.pk)
    assert entry.after == {"verb": "create", "code": "permission_denied"}
    assert "Builder role needed" in entry.reason


def test_the_admins_own_403_on_a_visible_row_is_audited(client, publisher, agent):
    client.force_login(publisher)
    response = client.post(
        f"/admin/agents/agent/{agent.pk}/change/", {"slug": agent.slug, "name": "X"}
    )
    assert response.status_code == 403
    entry = AuditEntry.objects.get(action="agents.agent.refused")
    assert entry.actor_id == publisher.pk and entry.target_id == str(agent.pk)
    assert entry.after["verb"] == "change" and entry.after["code"] == "permission_denied"
