"""Roles are records, revocation is exact: a grant is stored as what it is,
the rights derive from the grants, revoking one grant takes exactly what it gave and keeps what
the others give, revoking what is not held is 409 `not_held`, and no role is ever listed that
was not granted. Written from the outside: the API, the actions, the admin."""

import pytest
from django.db import IntegrityError, transaction
from guardian.shortcuts import get_user_perms

from evaluations.models import Case, DatasetVersion
from governance.actions.grant_role import GrantRole
from governance.actions.revoke_role import RevokeRole
from governance.models import AuditEntry, RoleGrant
from tests.support import factories
from tests.support.governance import api_client

AGENT_VERBS = ["build_agent", "bypass_agent", "change_agent", "publish_agent", "view_agent"]
DATASET_VERBS = ["change_dataset", "edit_dataset", "view_dataset"]


def fresh(user):
    return type(user).objects.get(pk=user.pk)


@pytest.fixture
def someone(db):
    return factories.user("someone")


@pytest.fixture
def dataset(db):
    dataset = factories.dataset("support-basics")
    factories.dataset_version(dataset, cases=[("refund", "Refund?", {})])
    return dataset


def post(admin, path, body):
    return api_client(admin).post(f"/api/v1/role-grants/{path}", body, format="json")


def grants_of(admin, username):
    answer = api_client(admin).get("/api/v1/role-grants/", {"user": username})
    return [(g["role"], g["scope"], g["agent"] or g["dataset"]) for g in answer.json()["results"]]


def last_revoke():
    return AuditEntry.objects.filter(action="governance.role.revoke").latest("sequence")


# --- the defects of the issue --------------------------------------------------------------------


def test_revoking_a_dataset_editor_takes_the_editing_away(admin_user, someone, dataset):
    body = {"user": "someone", "role": "Editor", "dataset": dataset.slug, "reason": "one week"}
    assert post(admin_user, "", body).status_code == 201
    assert (
        api_client(someone).post(f"/api/v1/dataset-versions/draft/{dataset.slug}/").status_code
        == 201
    )
    DatasetVersion.objects.filter(dataset=dataset, frozen_at__isnull=True).delete()

    revoked = post(admin_user, "revoke/", body)
    assert revoked.status_code == 200
    assert last_revoke().after == {"perms_removed": DATASET_VERBS}
    assert get_user_perms(someone, dataset).count() == 0

    client = api_client(fresh(someone))
    draft = client.post(f"/api/v1/dataset-versions/draft/{dataset.slug}/")
    imported = client.post(
        f"/api/v1/datasets/{dataset.slug}/draft/import/",
        [{"key": "after-revoke", "input": "x"}],
        format="json",
    )
    assert draft.status_code in (403, 404) and imported.status_code in (403, 404)
    assert not DatasetVersion.objects.filter(dataset=dataset, frozen_at__isnull=True).exists()
    assert not Case.objects.filter(key="after-revoke").exists()

    again = post(admin_user, "revoke/", body)
    assert (again.status_code, again.json()["code"]) == (409, "not_held")


def test_revoking_an_agents_admin_leaves_no_role_and_no_verb(admin_user, someone, agent):
    body = {"user": "someone", "role": "Admin", "agent": agent.slug}
    assert post(admin_user, "", body).status_code == 201
    assert grants_of(admin_user, "someone") == [("Admin", "agent", "support-bot")]

    assert post(admin_user, "revoke/", body).status_code == 200
    assert last_revoke().after == {"perms_removed": AGENT_VERBS}
    assert grants_of(admin_user, "someone") == []  # not Builder, not Publisher: never granted
    version = {
        "agent": agent.slug,
        "adapter": "python",
        "config": {"callable": "tests.support.agents_under_test.echo"},
    }
    created = api_client(fresh(someone)).post("/api/v1/versions/", version, format="json")
    assert created.status_code in (400, 403)  # the agent is not even visible any more
    assert not agent.versions.exists()
    for verb in AGENT_VERBS:
        assert not fresh(someone).has_perm(f"agents.{verb}", agent)


def test_an_editor_of_a_dataset_is_listed_as_an_editor_only(admin_user, someone, dataset):
    post(admin_user, "", {"user": "someone", "role": "Editor", "dataset": dataset.slug})
    assert grants_of(admin_user, "someone") == [("Editor", "dataset", "support-basics")]


def test_an_admin_of_an_agent_is_listed_as_an_admin_only(admin_user, someone, agent):
    post(admin_user, "", {"user": "someone", "role": "Admin", "agent": agent.slug})
    assert grants_of(admin_user, "someone") == [("Admin", "agent", "support-bot")]


# --- exact revocation ----------------------------------------------------------------------------


def test_revoking_one_of_two_grants_keeps_exactly_what_the_other_gives(admin_user, someone, agent):
    GrantRole(acting_user=admin_user, user=someone, role="Admin", obj=agent).execute()
    GrantRole(acting_user=admin_user, user=someone, role="Publisher", obj=agent).execute()
    RevokeRole(acting_user=admin_user, user=someone, role="Admin", obj=agent).execute()
    assert sorted(get_user_perms(someone, agent)) == ["publish_agent", "view_agent"]
    assert last_revoke().after == {"perms_removed": ["build_agent", "bypass_agent", "change_agent"]}
    assert grants_of(admin_user, "someone") == [("Publisher", "agent", "support-bot")]


def test_an_editor_and_an_admin_of_one_dataset_are_two_grants(admin_user, someone, dataset):
    """Their verbs on a dataset are the same: revoking either removes nothing; revoking the
    second removes all."""
    GrantRole(acting_user=admin_user, user=someone, role="Editor", obj=dataset).execute()
    GrantRole(acting_user=admin_user, user=someone, role="Admin", obj=dataset).execute()
    assert grants_of(admin_user, "someone") == [
        ("Admin", "dataset", "support-basics"),
        ("Editor", "dataset", "support-basics"),
    ]
    RevokeRole(acting_user=admin_user, user=someone, role="Admin", obj=dataset).execute()
    assert last_revoke().after == {"perms_removed": []}
    assert fresh(someone).has_perm("evaluations.edit_dataset", dataset)
    RevokeRole(acting_user=admin_user, user=someone, role="Editor", obj=dataset).execute()
    assert last_revoke().after == {"perms_removed": DATASET_VERBS}
    assert not fresh(someone).has_perm("evaluations.view_dataset", dataset)


def test_a_global_grant_and_a_scoped_one_are_revoked_apart(admin_user, someone, agent):
    GrantRole(acting_user=admin_user, user=someone, role="Publisher").execute()
    GrantRole(acting_user=admin_user, user=someone, role="Publisher", obj=agent).execute()
    RevokeRole(acting_user=admin_user, user=someone, role="Publisher").execute()
    someone = fresh(someone)
    assert not someone.groups.filter(name="Publisher").exists()
    assert someone.has_perm("agents.publish_agent", agent)
    assert not someone.has_perm("agents.publish_agent")


def test_rights_held_without_a_grant_are_not_a_role(admin_user, someone, agent):
    """Verbs given by hand (a shell) make no grant: revoking is 409, nothing is listed."""
    from guardian.shortcuts import assign_perm

    for verb in ("view_agent", "publish_agent"):
        assign_perm(f"agents.{verb}", someone, agent)
    body = {"user": "someone", "role": "Publisher", "agent": agent.slug}
    answer = post(admin_user, "revoke/", body)
    assert (answer.status_code, answer.json()["code"]) == (409, "not_held")
    assert AuditEntry.objects.filter(action="governance.role.refused").latest("sequence").after == {
        "verb": "revoke",
        "code": "not_held",
    }
    assert grants_of(admin_user, "someone") == []


def test_a_grant_records_who_when_and_why(admin_user, someone, agent):
    GrantRole(
        acting_user=admin_user, user=someone, role="Builder", obj=agent, reason="owns the bot"
    ).execute()
    grant = RoleGrant.objects.get(user=someone)
    assert (grant.user, grant.role, grant.scope, grant.agent, grant.dataset) == (
        someone,
        "Builder",
        "agent",
        agent,
        None,
    )
    assert grant.granted_by == admin_user and grant.reason == "owns the bot"
    assert grant.granted_at is not None


def test_a_role_with_no_meaning_on_the_scope_is_refused_both_ways(admin_user, someone, dataset):
    from sherlock.core.errors import ActionInvalid

    for verb in (GrantRole, RevokeRole):
        with pytest.raises(ActionInvalid):
            verb(acting_user=admin_user, user=someone, role="Builder", obj=dataset).execute()
    assert not RoleGrant.objects.filter(user=someone).exists()


def test_a_grant_goes_with_its_agent_audited_and_with_its_permissions(admin_user, someone, agent):
    from guardian.models import UserObjectPermission

    GrantRole(acting_user=admin_user, user=someone, role="Builder", obj=agent).execute()
    GrantRole(acting_user=admin_user, user=someone, role="Publisher", obj=agent).execute()
    pk = agent.pk
    agent.delete()
    assert not RoleGrant.objects.filter(user=someone).exists()
    assert not UserObjectPermission.objects.filter(object_pk=str(pk)).exists()
    entries = AuditEntry.objects.filter(action="governance.role.revoke").order_by("sequence")
    assert [(e.target_id, e.before["role"], e.after) for e in entries] == [
        (
            str(someone.pk),
            "Builder",
            {"perms_removed": ["build_agent", "change_agent", "view_agent"], "cause": "deleted"},
        ),
        (
            str(someone.pk),
            "Publisher",
            {"perms_removed": ["publish_agent", "view_agent"], "cause": "deleted"},
        ),
    ]
    assert entries[0].reason == "The agent support-bot was deleted."


def test_a_grant_goes_with_its_dataset_audited_and_a_hand_verb_too(admin_user, someone, dataset):
    from guardian.models import UserObjectPermission
    from guardian.shortcuts import assign_perm

    GrantRole(acting_user=admin_user, user=someone, role="Editor", obj=dataset).execute()
    outsider = factories.user("outsider")
    assign_perm("evaluations.view_dataset", outsider, dataset)
    pk = dataset.pk
    dataset.versions.all().delete()
    dataset.delete()
    assert not UserObjectPermission.objects.filter(object_pk=str(pk)).exists()
    revoke = last_revoke()
    assert (revoke.target_id, revoke.after) == (
        str(someone.pk),
        {"perms_removed": DATASET_VERBS, "cause": "deleted"},
    )
    assert AuditEntry.objects.filter(
        action="auth.permission.revoke", target_id=str(outsider.pk)
    ).exists()


# --- rights held without a grant -----------------------------------------------------------------


def test_a_global_revoke_names_the_group_it_removed(admin_user, someone):
    GrantRole(acting_user=admin_user, user=someone, role="Editor").execute()
    RevokeRole(acting_user=admin_user, user=someone, role="Editor").execute()
    assert last_revoke().after == {"groups_removed": ["Editor"]}
    assert not fresh(someone).groups.exists()


def test_a_hand_made_membership_is_revocable_and_not_listed(admin_user, someone):
    """Joining a role group from a shell is the role globally: not a grant (not listed), but
    revoking the role globally removes it, and the entry says there was no grant."""
    from django.contrib.auth.models import Group

    someone.groups.add(Group.objects.get(name="Editor"))
    assert grants_of(admin_user, "someone") == []
    body = {"user": "someone", "role": "Editor", "reason": "cleaning up hand-made rights"}
    answer = post(admin_user, "revoke/", body)
    assert answer.status_code == 200, answer.json()
    assert last_revoke().after == {"groups_removed": ["Editor"], "without_grant": True}
    assert not fresh(someone).groups.exists()
    again = post(admin_user, "revoke/", body)
    assert (again.status_code, again.json()["code"]) == (409, "not_held")


def test_a_grant_removes_a_hand_made_membership_and_says_so(admin_user, someone):
    from django.contrib.auth.models import Group

    someone.groups.add(Group.objects.get(name="Editor"))
    body = {"user": "someone", "role": "Publisher", "reason": "publishes release candidates"}
    assert post(admin_user, "", body).status_code == 201
    entry = AuditEntry.objects.filter(action="governance.role.grant").latest("sequence")
    assert entry.after == {
        "role": "Publisher",
        "scope": "global",
        "perms": [],
        "also_removed": ["Editor"],
    }
    assert list(fresh(someone).groups.values_list("name", flat=True)) == ["Publisher"]


def test_a_scoped_grant_removes_a_hand_given_verb_and_says_so(admin_user, someone, agent):
    from guardian.shortcuts import assign_perm

    assign_perm("agents.bypass_agent", someone, agent)
    GrantRole(acting_user=admin_user, user=someone, role="Publisher", obj=agent).execute()
    entry = AuditEntry.objects.filter(action="governance.role.grant").latest("sequence")
    assert entry.after["also_removed"] == ["bypass_agent"]
    assert sorted(get_user_perms(someone, agent)) == ["publish_agent", "view_agent"]


# --- what the database refuses -------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"scope": "global", "role": "Admin"},  # a second global Admin grant
        {"scope": "agent", "role": "Admin"},  # an agent grant naming no agent
        {"scope": "global", "role": "Builder", "with_agent": True},  # global, yet an agent
        {"scope": "agent", "role": "Editor", "with_agent": True},  # an Editor of an agent
    ],
)
def test_the_database_refuses_grants_that_make_no_sense(admin_user, agent, fields):
    fields = dict(fields)
    if fields.pop("with_agent", False):
        fields["agent"] = agent
    with pytest.raises(IntegrityError), transaction.atomic():
        RoleGrant.objects.create(user=admin_user, **fields)


def test_the_database_refuses_a_second_grant_of_a_role_on_one_agent(someone, agent):
    RoleGrant.objects.create(user=someone, role="Builder", scope="agent", agent=agent)
    with pytest.raises(IntegrityError), transaction.atomic():
        RoleGrant.objects.create(user=someone, role="Builder", scope="agent", agent=agent)


# --- the People page: one place to grant and revoke --------------------------------------------


def test_the_roles_page_lists_the_grants_and_revokes_exactly(client, admin_user, someone, dataset):
    GrantRole(acting_user=admin_user, user=someone, role="Editor", obj=dataset).execute()
    client.force_login(admin_user)
    url = f"/people/{someone.pk}/"
    body = client.get(url).content.decode()
    grants = body[body.index('id="grants"') : body.index("</table>")]
    assert "dataset support-basics" in grants and "Admin" not in grants
    response = client.post(url, {"role": "Editor", "dataset": dataset.pk, "revoke": "Revoke"})
    assert response.status_code == 302
    assert get_user_perms(someone, dataset).count() == 0
    again = client.post(
        url, {"role": "Editor", "dataset": dataset.pk, "revoke": "Revoke"}, follow=True
    )
    assert "is not an Editor of" in again.content.decode()
    # A POST that says neither verb changes nothing, whatever else it holds.
    GrantRole(acting_user=admin_user, user=someone, role="Editor", obj=dataset).execute()
    unsaid = client.post(url, {"role": "Editor", "dataset": dataset.pk}, follow=True)
    assert unsaid.status_code == 400 and "choose Grant or Revoke" in unsaid.content.decode()
    assert get_user_perms(someone, dataset).count() > 0


def test_the_role_grants_list_in_the_admin_is_read_only(client, admin_user, someone, agent):
    GrantRole(acting_user=admin_user, user=someone, role="Builder", obj=agent).execute()
    client.force_login(admin_user)
    listing = client.get("/admin/governance/rolegrant/")
    assert listing.status_code == 200 and "someone" in listing.content.decode()
    grant = RoleGrant.objects.get(user=someone)
    assert (
        client.post(f"/admin/governance/rolegrant/{grant.pk}/delete/", {"post": "yes"}).status_code
        == 403
    )
    assert RoleGrant.objects.filter(pk=grant.pk).exists()


def test_only_a_global_admin_reads_the_role_grants_in_the_admin(client, persona):
    client.force_login(persona("Admin", "here"))
    assert client.get("/admin/governance/rolegrant/").status_code == 403


def test_the_demo_personas_are_grants_and_seeding_twice_changes_nothing(db):
    from governance.management.commands.seed_demo import Command

    for _ in range(2):
        users = Command().seed_users()
    grants = sorted(RoleGrant.objects.values_list("user__username", "role", "scope"))
    assert grants == [
        ("admin", "Admin", "global"),
        ("builder", "Builder", "global"),
        ("editor", "Editor", "global"),
        ("publisher", "Publisher", "global"),
    ]
    assert users["publisher"].has_perm("agents.publish_agent")
    by_admin = RoleGrant.objects.exclude(user=users["admin"]).values_list("granted_by", flat=True)
    assert set(by_admin) == {users["admin"].pk}
    assert AuditEntry.objects.filter(action="governance.role.grant").count() == 3
