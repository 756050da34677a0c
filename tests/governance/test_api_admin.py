"""The administration API: publishing policies (create, change with versioning) and role grants
(global and per object, grant and revoke), through the same actions as the admin, for every
persona of the role matrix: only a global Admin acts (2xx, audited); everyone else, an Admin of
this agent or of another one included, is answered 403 before their input is read, and the
refusal is audited. Bad input answers 400 naming the field without echoing it; lists keep a
constant number of queries."""

import pytest

from governance.actions.grant_role import GrantRole
from governance.models import AuditEntry, PublishingPolicy
from tests.support import factories
from tests.support.governance import GLOBAL_ADMINS, PERSONAS, api_client, persona_id, split

matrix = pytest.mark.parametrize("role,scope", PERSONAS, ids=persona_id)
admins, not_admins = (
    pytest.mark.parametrize("role,scope", personas, ids=persona_id)
    for personas in split(GLOBAL_ADMINS)
)
GLOBAL_ROLES = {(role, "global") for role in ("Viewer", "Editor", "Builder", "Publisher", "Admin")}


def refused(user, noun, verb):
    entry = AuditEntry.objects.filter(action=f"governance.{noun}.refused").last()
    return entry is not None and entry.actor_id == user.pk and entry.after["verb"] == verb


# --- policies: read ------------------------------------------------------------------------------


@matrix
def test_every_global_role_reads_the_policies(role, scope, persona, policy):
    response = api_client(persona(role, scope)).get("/api/v1/policies/")
    assert response.status_code == (200 if (role, scope) in GLOBAL_ROLES else 403)
    if response.status_code == 200:
        (listed,) = response.json()["results"]
        assert listed["scope"] == "global" and listed["in_force"] is True
        assert listed["gate_datasets"] == ["gate-basics"]


def test_the_policy_list_filters_by_scope_and_version_in_force(admin_user, policy, agent):
    client = api_client(admin_user)
    client.post(f"/api/v1/policies/{policy.pk}/change/", {"repetitions": 3}, format="json")
    client.post("/api/v1/policies/", {"agent": agent.slug, "name": "Strict"}, format="json")
    in_force = client.get("/api/v1/policies/?in_force=true").json()["results"]
    assert sorted((p["scope"], p["version"]) for p in in_force) == [
        (f"agent:{agent.pk}", 1),
        ("global", 2),
    ]
    older = client.get("/api/v1/policies/?in_force=false").json()["results"]
    assert [(p["scope"], p["version"]) for p in older] == [("global", 1)]
    mine = client.get(f"/api/v1/policies/?agent={agent.slug}").json()["results"]
    assert [p["name"] for p in mine] == ["Strict"]


def test_the_policy_list_takes_a_constant_number_of_queries(
    admin_user, policy, gate_dataset, django_assert_num_queries
):
    client = api_client(admin_user)
    client.get("/api/v1/policies/")  # the key's first use records its last_used_at
    # The key's re-check (this process verified it a moment ago), count, page, gate datasets
    with django_assert_num_queries(4):
        client.get("/api/v1/policies/")
    for number in range(4):
        more = factories.agent(f"agent-{number}")
        made = PublishingPolicy.objects.create(name=f"P{number}", agent=more)
        made.gate_datasets.add(gate_dataset)
    with django_assert_num_queries(4):
        assert len(client.get("/api/v1/policies/").json()["results"]) == 5


# --- policies: create and change ----------------------------------------------------------------

RULES = {"name": "Support policy", "min_case_pass_rate": 0.9, "enforcement": "hard"}


@admins
def test_an_admin_creates_an_agents_policy(role, scope, persona, agent, gate_dataset):
    body = {**RULES, "agent": agent.slug, "gate_datasets": [gate_dataset.slug]}
    response = api_client(persona(role, scope)).post("/api/v1/policies/", body, format="json")
    assert response.status_code == 201, response.json()
    created = response.json()
    assert (created["scope"], created["version"], created["in_force"]) == (
        f"agent:{agent.pk}",
        1,
        True,
    )
    assert created["enforcement"] == "hard" and created["gate_datasets"] == ["gate-basics"]
    entry = AuditEntry.objects.get(action="governance.policy.create")
    assert entry.target_id == str(created["id"]) and entry.after["min_case_pass_rate"] == 0.9


@not_admins
def test_no_one_else_creates_a_policy(role, scope, persona, agent):
    user = persona(role, scope)
    body = {**RULES, "agent": agent.slug}
    response = api_client(user).post("/api/v1/policies/", body, format="json")
    assert response.status_code == 403 and response.json()["code"] == "permission_denied"
    assert not PublishingPolicy.objects.exists()
    assert refused(user, "policy", "create")


def test_a_non_admin_is_refused_before_their_input_is_read(builder):
    body = {"agent": "no-such-agent", "min_case_pass_rate": "lots"}
    response = api_client(builder).post("/api/v1/policies/", body, format="json")
    assert response.status_code == 403  # not 400: validation would tell which slugs exist


def test_a_second_policy_for_the_same_scope_answers_409(admin_user, policy):
    response = api_client(admin_user).post("/api/v1/policies/", RULES, format="json")
    assert (response.status_code, response.json()["code"]) == (409, "policy_exists")


@admins
def test_an_admin_changes_a_policy_into_its_next_version(role, scope, persona, policy):
    body = {"min_case_pass_rate": 0.8, "reason": "Two flaky cases are being rewritten."}
    response = api_client(persona(role, scope)).post(
        f"/api/v1/policies/{policy.pk}/change/", body, format="json"
    )
    assert response.status_code == 201, response.json()
    new = response.json()
    assert (new["version"], new["min_case_pass_rate"], new["in_force"]) == (2, 0.8, True)
    assert new["gate_datasets"] == ["gate-basics"]  # unchanged rules are carried over
    old = PublishingPolicy.objects.get(pk=policy.pk)
    assert old.min_case_pass_rate == 1.0  # the version changed is never edited
    entry = AuditEntry.objects.get(action="governance.policy.change")
    assert entry.before["min_case_pass_rate"] == 1.0 and entry.after["min_case_pass_rate"] == 0.8
    assert entry.reason == body["reason"]


@not_admins
def test_no_one_else_changes_a_policy(role, scope, persona, policy):
    user = persona(role, scope)
    response = api_client(user).post(
        f"/api/v1/policies/{policy.pk}/change/", {"min_case_pass_rate": 0.1}, format="json"
    )
    assert response.status_code == 403
    assert PublishingPolicy.objects.count() == 1
    assert refused(user, "policy", "change")
    entry = AuditEntry.objects.filter(action="governance.policy.refused").last()
    assert entry.target_id == str(policy.pk)


def test_changing_an_older_version_answers_409(admin_user, policy):
    client = api_client(admin_user)
    client.post(f"/api/v1/policies/{policy.pk}/change/", {"repetitions": 2}, format="json")
    stale = client.post(f"/api/v1/policies/{policy.pk}/change/", {"repetitions": 3}, format="json")
    assert (stale.status_code, stale.json()["code"]) == (409, "stale_policy")


@pytest.mark.parametrize(
    "body,field",
    [
        ({"min_case_pass_rate": 1.5}, "min_case_pass_rate"),
        ({"min_case_pass_rate": "NaN"}, "min_case_pass_rate"),
        ({"enforcement": "sometimes"}, "enforcement"),
        ({"repetitions": 0}, "repetitions"),
        ({"name": "x" * 201}, "name"),
        ({"gate_datasets": ["no-such-dataset"]}, "gate_datasets"),
        ({"reason": "x" * 2001}, "reason"),
        ({}, "changes"),  # nothing changed
    ],
)
def test_bad_rules_answer_400_naming_the_field(admin_user, policy, body, field):
    response = api_client(admin_user).post(
        f"/api/v1/policies/{policy.pk}/change/", body, format="json"
    )
    assert response.status_code == 400, response.json()
    assert field in response.content.decode()
    assert "no-such-dataset" not in response.content.decode()  # the input is not echoed
    assert PublishingPolicy.objects.count() == 1


def test_a_missing_policy_answers_404(admin_user, db):
    response = api_client(admin_user).post("/api/v1/policies/999/change/", {}, format="json")
    assert response.status_code == 404


# --- role grants --------------------------------------------------------------------------------


@matrix
def test_only_a_global_admin_lists_the_role_grants(role, scope, persona):
    response = api_client(persona(role, scope)).get("/api/v1/role-grants/")
    assert response.status_code == (200 if (role, scope) in GLOBAL_ADMINS else 403)


def test_the_grant_list_shows_global_and_object_grants(persona, admin_user, agent, gate_dataset):
    persona("Publisher", "here")
    persona("Editor", "here")
    persona("Builder", "global")
    grants = api_client(admin_user).get("/api/v1/role-grants/").json()["results"]
    row = {"agent": None, "dataset": None}
    assert {**row, "user": "publisher-here", "role": "Publisher", "scope": "agent",
            "agent": agent.slug} in grants  # fmt: skip
    assert {**row, "user": "editor-here", "role": "Editor", "scope": "dataset",
            "dataset": gate_dataset.slug} in grants  # fmt: skip
    assert {**row, "user": "builder-global", "role": "Builder", "scope": "global"} in grants
    only = api_client(admin_user).get("/api/v1/role-grants/?user=publisher-here").json()
    assert [g["role"] for g in only["results"]] == ["Publisher"]


def test_the_grant_list_takes_a_constant_number_of_queries(
    persona, admin_user, django_assert_num_queries
):
    client = api_client(admin_user)
    persona("Publisher", "here")
    persona("Editor", "here")
    client.get("/api/v1/role-grants/")  # the key's first use records its last_used_at
    with django_assert_num_queries(3):  # key re-check, is Admin, the grants
        client.get("/api/v1/role-grants/")
    for role in ("Publisher", "Builder", "Editor", "Admin"):
        persona(role, "other")
        persona(role, "global")
    with django_assert_num_queries(3):
        # the Admin, the two above and eight more: each grant once, no role inferred besides
        assert client.get("/api/v1/role-grants/").json()["count"] == 11


@admins
def test_an_admin_grants_and_revokes_a_role_for_one_agent(role, scope, persona, builder, agent):
    client = api_client(persona(role, scope))
    body = {"user": "builder", "role": "Publisher", "agent": agent.slug, "reason": "on call"}
    granted = client.post("/api/v1/role-grants/", body, format="json")
    assert granted.status_code == 201, granted.json()
    assert granted.json() == {
        "user": "builder",
        "role": "Publisher",
        "scope": "agent",
        "agent": agent.slug,
        "dataset": None,
    }
    assert builder.has_perm("agents.publish_agent", agent)
    assert AuditEntry.objects.get(action="governance.role.grant").reason == "on call"

    revoked = client.post("/api/v1/role-grants/revoke/", body, format="json")
    assert revoked.status_code == 200, revoked.json()
    fresh = type(builder).objects.get(pk=builder.pk)
    assert not fresh.has_perm("agents.publish_agent", agent)
    assert AuditEntry.objects.filter(action="governance.role.revoke").exists()


def test_an_admin_grants_and_revokes_a_global_role(admin_user, outsider):
    client = api_client(admin_user)
    body = {"user": "outsider", "role": "Editor"}
    assert client.post("/api/v1/role-grants/", body, format="json").status_code == 201
    assert outsider.groups.filter(name="Editor").exists()
    again = client.post("/api/v1/role-grants/", body, format="json")
    assert (again.status_code, again.json()["code"]) == (409, "already_held")
    assert client.post("/api/v1/role-grants/revoke/", body, format="json").status_code == 200
    assert not outsider.groups.filter(name="Editor").exists()
    gone = client.post("/api/v1/role-grants/revoke/", body, format="json")
    assert (gone.status_code, gone.json()["code"]) == (409, "not_held")


@not_admins
@pytest.mark.parametrize("verb", ["grant", "revoke"])
def test_no_one_else_grants_or_revokes_roles(role, scope, persona, verb, outsider, agent):
    user = persona(role, scope)
    if verb == "revoke":
        admin = factories.user("granting-admin", role="Admin")
        GrantRole(acting_user=admin, user=outsider, role="Publisher", obj=agent).execute()
    url = "/api/v1/role-grants/" + ("revoke/" if verb == "revoke" else "")
    body = {"user": "outsider", "role": "Publisher", "agent": agent.slug}
    response = api_client(user).post(url, body, format="json")
    assert response.status_code == 403
    fresh = type(outsider).objects.get(pk=outsider.pk)
    assert fresh.has_perm("agents.publish_agent", agent) == (verb == "revoke")
    assert refused(user, "role", verb)


def test_an_admin_cannot_grant_themselves_through_an_agent_admin_role(persona, outsider, agent):
    """An Admin of this agent only holds its verbs, not the right to hand them out."""
    scoped = persona("Admin", "here")
    body = {"user": scoped.username, "role": "Admin"}
    assert api_client(scoped).post("/api/v1/role-grants/", body, format="json").status_code == 403
    assert not scoped.groups.filter(name="Admin").exists()


@pytest.mark.parametrize(
    "body,field",
    [
        ({"user": "nobody-by-that-name", "role": "Admin"}, "user"),
        ({"user": "outsider", "role": "Overlord"}, "role"),
        ({"user": "outsider", "role": "Editor", "agent": "support-bot"}, "role"),
        (
            {"user": "outsider", "role": "Admin", "agent": "support-bot", "dataset": "gate-basics"},
            "dataset",
        ),
        ({"user": "outsider", "role": "Admin", "reason": "x" * 2001}, "reason"),
    ],
)
def test_bad_grants_answer_400_naming_the_field(
    admin_user, outsider, agent, gate_dataset, body, field
):
    response = api_client(admin_user).post("/api/v1/role-grants/", body, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.content.decode()
    assert "nobody-by-that-name" not in response.content.decode()
    assert not outsider.groups.exists()
