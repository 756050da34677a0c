"""The single sign-on mapping, as data: a provider's claim path and strict
mode, and rules group -> role (global or on one agent or dataset), edited by Admins through
actions; re-applied at every sign-in by `ApplySSORoles`: SSO grants follow the groups, grants
made by hand are never touched, and every change is audited with the claims that caused it."""

import pytest

from governance.actions.apply_sso_roles import ApplySSORoles
from governance.actions.grant_role import GrantRole
from governance.actions.map_sso_group import MapSSOGroup
from governance.actions.unmap_sso_group import UnmapSSOGroup
from governance.actions.update_sso_provider import UpdateSSOProvider
from governance.models import AuditEntry, RoleGrant, SSOGroupRole
from governance.sso.claims import groups_at, merged_claims
from sherlock.core.errors import ActionDenied, ActionInvalid
from tests.support import factories


@pytest.fixture(autouse=True)
def _provider(settings):
    settings.SHERLOCK_OIDC_APPS = [
        {"provider_id": "corp", "name": "Corp", "client_id": "c", "settings": {}}
    ]


@pytest.fixture
def mapping(admin_user):
    UpdateSSOProvider(
        acting_user=admin_user, provider_id="corp", claim_path="groups", strict=True
    ).execute()
    MapSSOGroup(acting_user=admin_user, provider_id="corp", group="qa", role="Editor").execute()
    agent = factories.agent("billing-bot")
    MapSSOGroup(
        acting_user=admin_user, provider_id="corp", group="bots", role="Builder", obj=agent
    ).execute()
    return agent


def claims(*groups, sub="s-1"):
    return {"iss": "https://idp.example", "sub": sub, "groups": list(groups)}


def apply(user, *groups):
    return ApplySSORoles(user=user, provider_id="corp", claims=claims(*groups)).execute()


@pytest.mark.parametrize(
    "data,path,expected",
    [
        ({"groups": ["b", "a", "a"]}, "groups", ["a", "b"]),
        ({"realm_access": {"roles": ["x"]}}, "realm_access.roles", ["x"]),
        ({"groups": "solo"}, "groups", []),
        ({"groups": [1, None, "ok"]}, "groups", ["ok"]),
        ({"groups": {"not": "a list"}}, "groups", []),
        ({}, "groups", []),
        ({"realm_access": ["x"]}, "realm_access.roles", []),
    ],
)
def test_groups_are_read_at_a_dotted_claim_path(data, path, expected):
    assert groups_at(data, path) == expected


def test_a_string_is_one_group_only_where_the_operator_says_so(settings):
    assert groups_at({"groups": "solo"}, "groups") == []
    settings.SHERLOCK_SSO_GROUP_STRING = True
    assert groups_at({"groups": "solo"}, "groups") == ["solo"]


def test_a_groups_claim_sent_as_a_string_grants_no_mapped_role(mapping, outsider):
    """A provider misconfigured to send "qa" where a list belongs grants nothing by default."""
    claims_as_string = {"iss": "https://idp.example", "sub": "s-1", "groups": "qa"}
    granted, _ = ApplySSORoles(user=outsider, provider_id="corp", claims=claims_as_string).execute()
    assert granted == [] and not outsider.role_grants.exists()


def test_userinfo_claims_win_over_the_id_token():
    extra = {"id_token": {"sub": "1", "groups": ["old"]}, "userinfo": {"groups": ["new"]}}
    assert merged_claims(extra) == {"sub": "1", "groups": ["new"]}


def test_a_mapped_group_grants_its_role_marked_as_sso_with_the_claims(mapping, outsider):
    granted, revoked = apply(outsider, "qa", "unrelated")
    assert [g.role for g in granted] == ["Editor"] and revoked == []
    grant = RoleGrant.objects.get(user=outsider)
    assert (grant.source, grant.sso_provider, grant.scope) == ("sso", "corp", "global")
    outsider.refresh_from_db()
    assert outsider.groups.filter(name="Editor").exists() and outsider.is_staff
    entry = AuditEntry.objects.get(action="governance.role.grant", target_id=str(outsider.pk))
    assert entry.actor_id is None
    assert entry.after["claims"] == {
        "iss": "https://idp.example",
        "sub": "s-1",
        "claim_path": "groups",
        "groups": ["qa", "unrelated"],
    }
    assert entry.after["source"] == "sso" and entry.after["group"] == "qa"


def test_a_scoped_rule_grants_on_its_agent_only(mapping, outsider):
    apply(outsider, "bots")
    assert outsider.has_perm("agents.build_agent", mapping)
    assert not outsider.has_perm("agents.build_agent")


def test_a_group_removed_at_the_provider_revokes_at_the_next_sign_in(mapping, outsider):
    apply(outsider, "qa")
    granted, revoked = apply(outsider, "bots")
    assert [g.role for g in revoked] == ["Editor"] and [g.role for g in granted] == ["Builder"]
    outsider.refresh_from_db()
    assert not outsider.groups.filter(name="Editor").exists()
    entry = AuditEntry.objects.filter(action="governance.role.revoke").get()
    assert entry.before["role"] == "Editor" and entry.after["claims"]["groups"] == ["bots"]
    apply(outsider)
    assert not RoleGrant.objects.filter(user=outsider).exists()
    outsider.refresh_from_db()
    assert not outsider.is_staff


def test_a_hand_grant_is_never_touched_nor_doubled(mapping, admin_user, outsider):
    GrantRole(acting_user=admin_user, user=outsider, role="Editor").execute()
    granted, _ = apply(outsider, "qa")
    assert granted == []
    apply(outsider)
    grant = RoleGrant.objects.get(user=outsider)
    assert grant.source == "hand" and grant.role == "Editor"


def test_re_applying_the_same_groups_changes_nothing(mapping, outsider):
    apply(outsider, "qa")
    before = AuditEntry.objects.count()
    assert apply(outsider, "qa") == ([], [])
    assert AuditEntry.objects.count() == before


def test_an_unmapped_rule_takes_its_role_away_at_the_next_sign_in(mapping, admin_user, outsider):
    apply(outsider, "qa")
    UnmapSSOGroup(acting_user=admin_user, rule=SSOGroupRole.objects.get(group="qa")).execute()
    _, revoked = apply(outsider, "qa")
    assert [g.role for g in revoked] == ["Editor"]
    assert AuditEntry.objects.filter(action="governance.sso.unmap").exists()


def test_no_claim_grants_bypass_approval_unless_the_mapping_says_so(admin_user, outsider):
    with pytest.raises(ActionInvalid, match="may approve bypasses"):
        MapSSOGroup(acting_user=admin_user, provider_id="corp", group="ops", role="Admin").execute()
    assert not SSOGroupRole.objects.exists()
    MapSSOGroup(
        acting_user=admin_user, provider_id="corp", group="ops", role="Admin", allow_bypass=True
    ).execute()
    apply(outsider, "ops")
    assert outsider.has_perm("agents.bypass_agent")
    entry = AuditEntry.objects.get(action="governance.sso.map")
    assert entry.after["allow_bypass"] is True


def test_only_configured_providers_and_valid_paths(admin_user):
    with pytest.raises(ActionInvalid, match="no configured provider"):
        UpdateSSOProvider(
            acting_user=admin_user, provider_id="other", claim_path="groups", strict=False
        ).execute()
    with pytest.raises(ActionInvalid, match="claim path"):
        UpdateSSOProvider(
            acting_user=admin_user, provider_id="corp", claim_path="a..b", strict=False
        ).execute()


@pytest.mark.parametrize("persona", ["editor", "builder", "publisher", "outsider"])
def test_only_an_admin_edits_the_mapping(request, persona):
    user = request.getfixturevalue(persona)
    with pytest.raises(ActionDenied):
        MapSSOGroup(acting_user=user, provider_id="corp", group="qa", role="Editor").execute()
    with pytest.raises(ActionDenied):
        UpdateSSOProvider(
            acting_user=user, provider_id="corp", claim_path="groups", strict=False
        ).execute()
    assert AuditEntry.objects.filter(action="governance.sso.refused", actor=user).count() == 2


def test_the_mapping_page_edits_through_the_actions(client, admin_user):
    client.force_login(admin_user)
    client.post("/people/sso/", {"provider": "corp", "claim_path": "roles", "configure": "1"})
    client.post("/people/sso/", {"provider": "corp", "group": "qa", "role": "Editor", "map": "1"})
    refused = client.post(
        "/people/sso/",
        {"provider": "corp", "group": "ops", "role": "Admin", "map": "1"},
        follow=True,
    )
    assert "may approve bypasses" in refused.content.decode()
    page = client.get("/people/sso/").content.decode()
    assert 'value="roles"' in page and "<code>qa</code>" in page
