"""The admin as an operator's panel that obeys the same rules: changelists show what the user
may see, change views refuse what the user may not change, admin actions call the domain
actions (so the role matrix holds there too), rights are granted only on the Roles page, and
the audit log is read-only and exportable by Admins."""

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Group

from agents.choices import VersionState
from governance.actions.request_bypass import RequestBypass
from governance.actions.update_policy import UpdatePolicy
from governance.choices import BypassState
from governance.models import AuditEntry, PublishingPolicy
from tests.support import factories
from tests.support.governance import BUILDERS, PERSONAS, PUBLISHERS, REASON, persona_id

matrix = pytest.mark.parametrize("role,scope", PERSONAS, ids=persona_id)


def logged_in(client, user):
    client.force_login(user)
    return client


def act(client, url, action, *objects, **extra):
    return client.post(
        url, {"action": action, ACTION_CHECKBOX_NAME: [o.pk for o in objects], **extra}
    )


VERSIONS = "/admin/agents/agentversion/"


@matrix
def test_publish_through_the_admin(role, scope, persona, client, passed_request, good_version):
    logged_in(client, persona(role, scope))
    act(client, VERSIONS, "publish", good_version)
    good_version.refresh_from_db()
    assert (good_version.state == VersionState.PUBLISHED) == ((role, scope) in PUBLISHERS)


@matrix
def test_request_publication_through_the_admin(role, scope, persona, client, good_version, policy):
    logged_in(client, persona(role, scope))
    act(client, VERSIONS, "request_publication", good_version)
    assert good_version.publish_requests.exists() == ((role, scope) in BUILDERS)


def test_a_refused_admin_action_says_why_and_is_audited(client, admin_user, blocked_request):
    logged_in(client, admin_user)
    response = act(client, VERSIONS, "publish", blocked_request.agent_version)
    followed = client.get(response.url)
    assert "publishing it needs an approved bypass" in followed.content.decode()
    assert AuditEntry.objects.filter(action="governance.version.refused").exists()


def test_the_changelist_shows_a_scoped_user_only_their_agent(client, persona, agent, other_agent):
    logged_in(client, persona("Publisher", "here"))
    page = client.get("/admin/agents/agent/")
    assert page.status_code == 200
    slugs = [a.slug for a in page.context["cl"].result_list]
    assert slugs == ["support-bot"]


def test_a_staff_user_without_a_role_sees_no_agents(client, outsider, agent):
    logged_in(client, outsider)
    assert client.get("/admin/agents/agent/").status_code == 403


def test_the_change_view_refuses_a_change_the_user_may_not_make(client, publisher, agent):
    logged_in(client, publisher)
    url = f"/admin/agents/agent/{agent.pk}/change/"
    assert client.get(url).status_code == 200  # Publishers may look
    response = client.post(url, {"slug": agent.slug, "name": "Renamed", "description": ""})
    assert response.status_code == 403
    agent.refresh_from_db()
    assert agent.name != "Renamed"


def test_an_agent_of_someone_elses_scope_cannot_be_opened(client, persona, agent):
    logged_in(client, persona("Builder", "other"))
    response = client.get(f"/admin/agents/agent/{agent.pk}/change/")
    assert response.status_code == 302  # "doesn't exist" for this user, back to the index


def test_an_admin_requests_a_bypass_with_a_reason_in_the_admin(client, admin_user, blocked_request):
    logged_in(client, admin_user)
    url = "/admin/governance/publishrequest/"
    form = act(client, url, "request_bypass", blocked_request)
    assert form.status_code == 200 and "reason" in form.content.decode()
    act(client, url, "request_bypass", blocked_request, apply="1", reason="too short")
    assert not blocked_request.bypasses.exists()
    act(client, url, "request_bypass", blocked_request, apply="1", reason=REASON)
    assert blocked_request.bypasses.get().state == BypassState.APPROVED


def test_a_publisher_is_not_offered_the_bypass_action(client, publisher, blocked_request):
    logged_in(client, publisher)
    page = client.get("/admin/governance/publishrequest/")
    assert "request_bypass" not in page.content.decode()
    act(
        client,
        "/admin/governance/publishrequest/",
        "request_bypass",
        blocked_request,
        apply="1",
        reason=REASON,
    )
    assert not blocked_request.bypasses.exists()


def test_a_second_admin_approves_in_the_admin(client, admin_user, policy, blocked_request):
    policy.bypass_requires_second_admin = True
    policy.save(update_fields=["bypass_requires_second_admin"])
    bypass = RequestBypass(
        acting_user=admin_user, publish_request=blocked_request, reason=REASON
    ).execute()
    logged_in(client, factories.user("second-admin", role="Admin"))
    act(client, "/admin/governance/bypass/", "approve", bypass)
    bypass.refresh_from_db()
    assert bypass.state == BypassState.APPROVED


def test_saving_a_policy_in_the_admin_writes_its_next_version(client, admin_user, policy):
    logged_in(client, admin_user)
    form = (
        client.get(f"/admin/governance/publishingpolicy/{policy.pk}/change/")
        .context["adminform"]
        .form
    )
    data = {name: value for name, value in form.initial.items() if value is not None}
    data.update(min_case_pass_rate="0.8", gate_datasets=[d.pk for d in policy.gate_datasets.all()])
    data = {k: v for k, v in data.items() if k not in ("agent", "scope_key", "version")}
    response = client.post(f"/admin/governance/publishingpolicy/{policy.pk}/change/", data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    current = PublishingPolicy.objects.current("global")
    assert (current.version, current.min_case_pass_rate) == (2, 0.8)
    assert AuditEntry.objects.get(action="governance.policy.change").actor_id == admin_user.pk


def test_a_scoped_admin_cannot_change_policies(client, persona, policy):
    logged_in(client, persona("Admin", "here"))
    url = f"/admin/governance/publishingpolicy/{policy.pk}/change/"
    assert client.post(url, {"name": "Lax", "min_case_pass_rate": "0"}).status_code == 403


def test_an_older_policy_version_is_read_only(client, admin_user, policy):
    UpdatePolicy(acting_user=admin_user, policy=policy, changes={"repetitions": 2}).execute()
    logged_in(client, admin_user)
    url = f"/admin/governance/publishingpolicy/{policy.pk}/change/"
    assert client.post(url, {"name": "Lax", "min_case_pass_rate": "0"}).status_code == 403


def test_the_user_page_does_not_edit_groups_or_superuser(client, admin_user):
    someone = factories.user("someone")
    logged_in(client, admin_user)
    url = f"/admin/auth/user/{someone.pk}/change/"
    response = client.post(
        url,
        {
            "username": "someone",
            "is_active": "on",
            "is_staff": "on",
            "is_superuser": "on",
            "groups": [Group.objects.get(name="Admin").pk],
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
        },
    )
    assert response.status_code == 302  # saved: the other fields were accepted
    someone.refresh_from_db()
    assert not someone.is_superuser and not someone.groups.exists()


def test_the_admins_roles_address_leads_to_the_people_page(client, admin_user, agent):
    """Roles are granted in one place: the user's admin page links to People, and the old
    Roles address redirects there; a grant made there is the one action, audited."""
    someone = factories.user("someone")
    logged_in(client, admin_user)
    answer = client.get(f"/admin/auth/user/{someone.pk}/roles/")
    assert answer.status_code == 302 and answer["Location"] == f"/people/{someone.pk}/"
    page = client.get(f"/admin/auth/user/{someone.pk}/change/").content.decode()
    assert f'href="/people/{someone.pk}/"' in page
    client.post(f"/people/{someone.pk}/", {"role": "Publisher", "agent": agent.pk, "grant": "1"})
    assert someone.has_perm("agents.publish_agent", agent)
    assert AuditEntry.objects.get(action="governance.role.grant").actor_id == admin_user.pk


def test_the_people_page_is_closed_to_everyone_else(client, persona):
    someone = factories.user("someone")
    logged_in(client, persona("Admin", "here"))
    assert client.get(f"/admin/auth/user/{someone.pk}/roles/", follow=True).status_code == 403


def test_admins_export_the_audit_log_as_csv(client, admin_user, passed_request):
    logged_in(client, admin_user)
    entries = AuditEntry.objects.filter(action__startswith="governance.request.")
    response = act(client, "/admin/governance/auditentry/", "export_csv", *entries)
    body = response.content.decode()
    assert response["Content-Type"].startswith("text/csv")
    assert body.splitlines()[0].startswith("sequence,at,actor_id")
    assert "governance.request.decide" in body
    assert AuditEntry.objects.filter(action="governance.audit.export").exists()


def test_the_audit_log_filters_by_actor(client, admin_user, publisher, passed_request):
    logged_in(client, admin_user)
    page = client.get("/admin/governance/auditentry/", {"actor_repr": "author"})
    assert {e.actor_repr for e in page.context["cl"].result_list} == {"author"}


def test_only_admins_see_the_audit_log_in_the_admin(client, publisher):
    logged_in(client, publisher)
    assert client.get("/admin/governance/auditentry/").status_code == 403


def test_guardians_object_permission_screens_are_not_mounted(client, admin_user, agent):
    # GuardedModelAdmin's `<id>/permissions/` lets a staff user grant themselves rights.
    logged_in(client, admin_user)
    response = client.get(f"/admin/agents/agent/{agent.pk}/permissions/", follow=True)
    assert response.redirect_chain[-1][0] == "/admin/"  # "doesn't exist", back to the index
    assert not any("guardian" in (t.name or "") for t in response.templates)


def test_a_scoped_publisher_opens_the_requests_and_bypasses_of_its_agent(
    client, persona, approved_bypass, blocked_request
):
    logged_in(client, persona("Publisher", "here"))
    request_page = client.get(f"/admin/governance/publishrequest/{blocked_request.pk}/change/")
    bypass_page = client.get(f"/admin/governance/bypass/{approved_bypass.pk}/change/")
    assert (request_page.status_code, bypass_page.status_code) == (200, 200)
    logged_in(client, persona("Publisher", "other"))
    elsewhere = client.get(f"/admin/governance/publishrequest/{blocked_request.pk}/change/")
    assert elsewhere.status_code == 302  # not in this user's changelist: "doesn't exist"


def test_a_policy_change_the_action_refuses_is_shown_on_its_field(client, admin_user, policy):
    logged_in(client, admin_user)
    url = f"/admin/governance/publishingpolicy/{policy.pk}/change/"
    form = client.get(url).context["adminform"].form
    data = {name: value for name, value in form.initial.items() if value is not None}
    data = {k: v for k, v in data.items() if k not in ("agent", "scope_key", "version")}
    data.update(bypass_expiry_hours="0", gate_datasets=[d.pk for d in policy.gate_datasets.all()])
    response = client.post(url, data)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert "at least one hour" in " ".join(errors["bypass_expiry_hours"])
    assert PublishingPolicy.objects.current("global").version == policy.version
    unchanged = {k: v for k, v in data.items() if k != "bypass_expiry_hours"}
    unchanged["bypass_expiry_hours"] = policy.bypass_expiry_hours
    response = client.post(url, unchanged)
    assert response.status_code == 200
    assert "Nothing changed." in " ".join(response.context["adminform"].form.non_field_errors())


def test_the_policy_list_names_each_policys_agent(client, admin_user, agent):
    from governance.actions.create_policy import CreatePolicy

    CreatePolicy(acting_user=admin_user, agent=agent, name="Own").execute()
    logged_in(client, admin_user)
    body = client.get("/admin/governance/publishingpolicy/").content.decode()
    assert f"agent {agent.slug}" in body and f"agent:{agent.pk}" not in body
