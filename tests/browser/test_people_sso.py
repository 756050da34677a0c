"""People and single sign-on in chromium, against a real OIDC provider on loopback
(tests/support/oidc_provider.py, a second process), the page server configured for it as an
operator would (SHERLOCK_OIDC_PROVIDERS, docs/sso.md).

An Admin adds two people, one by invitation (the invitee opens the link, sets a password, signs
in and sees what a Builder may do) and one through single sign-on (the groups the provider
signs map to Editor); the provider's groups decide the roles at every sign-in (a group removed
there takes the role away, a role granted by hand stays); a user whose groups map to nothing is
refused in strict mode; an e-mail address never links an SSO sign-in to an existing account;
signing out ends the provider's session too.
"""

from urllib.parse import parse_qs, urlparse

import pytest
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth import get_user_model

from governance.actions.grant_role import GrantRole
from governance.actions.map_sso_group import MapSSOGroup
from governance.actions.update_sso_provider import UpdateSSOProvider
from governance.models import AuditEntry, RoleGrant
from tests.support import factories
from tests.support.browser import log_in
from tests.support.oidc_provider import sso_sign_in

pytestmark = [pytest.mark.slow]

User = get_user_model()


@pytest.fixture
def server_env(provider):
    return provider.env()


@pytest.fixture
def corp(settings, provider):
    """The test process's settings name the provider too (the mapping's actions check it)."""
    settings.SHERLOCK_OIDC_APPS = [{"provider_id": "corp", "name": "Corp", "settings": {}}]


def test_an_admin_adds_two_people_one_by_invite_one_through_sso(server, browser, provider, shot):
    factories.user("admin", role="Admin")
    factories.agent("billing-bot")
    provider.set_user(
        "carol-sub",
        {"preferred_username": "carol", "email": "carol@example.com", "groups": ["qa"]},
    )
    admin = browser.new_context().new_page()
    log_in(admin, server, "admin", next_url="/runs/")
    admin.click("header nav a:has-text('People')")
    admin.wait_for_selector("#invite")
    admin.fill("#id_invite_username", "dana")
    admin.select_option("#id_invite_role", "Builder")
    admin.click("#invite button")
    link = admin.input_value("#invite-url")
    assert "/people/join/" in link
    shot(admin, "people-invited")

    admin.click("text=Single sign-on mapping")
    section = admin.locator("section[data-provider=corp]")
    section.locator("input[name=claim_path]").fill("groups")
    section.locator("input[name=strict]").check()
    section.locator("button[name=configure]").click()
    section = admin.locator("section[data-provider=corp]")
    section.locator("form.map input[name=group]").fill("qa")
    section.locator("form.map select[name=role]").select_option("Editor")
    section.locator("form.map button").click()
    admin.wait_for_selector("text=Mapping changed")
    assert admin.locator("section[data-provider=corp] table.rules code").inner_text() == "qa"
    shot(admin, "people-sso-mapping")
    # A mapping with no group, to the Admin role without bypass approval: both said at once.
    group = admin.locator("section[data-provider=corp] form.map input[name=group]")
    group.evaluate("e => e.required = false")  # past the browser's own check
    admin.locator("section[data-provider=corp] form.map select[name=role]").select_option("Admin")
    admin.locator("section[data-provider=corp] form.map button").click()
    admin.wait_for_selector("ul.messages li.fail")
    said = admin.inner_text("ul.messages")
    assert "group: This field is required." in said and "may approve bypasses" in said
    shot(admin, "people-sso-every-error")

    # The invitee: the link, a password, the sign-in page, and what a Builder sees.
    dana = browser.new_context().new_page()
    dana.goto(link)
    dana.fill("#id_password1", "dana's own long password")
    dana.fill("#id_password2", "dana's own long password")
    dana.click("#join button")
    dana.wait_for_selector("text=Your password is set")
    shot(dana, "people-join-done")
    dana.fill("#id_username", "dana")
    dana.fill("#id_password", "dana's own long password")
    dana.click("input[type=submit]")
    dana.wait_for_selector("header .who:has-text('dana')")
    nav = dana.locator("header nav").inner_text()
    assert "Publish" in nav and "People" not in nav and "Labels" not in nav
    assert dana.goto(f"{server}/people/").status == 403
    assert dana.goto(f"{server}/admin/").status == 200  # staff by her grant, nobody ticked it
    shot(dana, "people-invitee-403")

    # The second person signs in through the provider; their group gives Editor.
    carol = browser.new_context().new_page()
    asked = []
    sso_sign_in(carol, server, "carol-sub", asked)
    carol.wait_for_selector("header .who:has-text('carol')")
    assert "Labels" in carol.locator("header nav").inner_text()
    query = parse_qs(urlparse(asked[0]).query)
    assert query["code_challenge_method"] == ["S256"] and query["nonce"][0]
    shot(carol, "people-sso-signed-in")
    account = SocialAccount.objects.get(provider="corp", uid="carol-sub")
    assert account.user.username == "carol"
    grant = RoleGrant.objects.get(user=account.user)
    assert (grant.role, grant.source) == ("Editor", "sso")

    admin.goto(f"{server}/people/")
    carol_row = admin.locator("tr[data-user=carol]").inner_text()
    assert "Editor" in carol_row and "SSO" in carol_row and "never" not in carol_row
    assert "Builder" in admin.locator("tr[data-user=dana]").inner_text()
    shot(admin, "people-list")


def test_the_provider_groups_decide_roles_at_every_sign_in_and_sign_out_ends_its_session(
    server, browser, provider, corp, shot
):
    admin = factories.user("admin", role="Admin")
    agent = factories.agent("billing-bot")
    UpdateSSOProvider(
        acting_user=admin, provider_id="corp", claim_path="groups", strict=True
    ).execute()
    MapSSOGroup(acting_user=admin, provider_id="corp", group="qa", role="Editor").execute()
    MapSSOGroup(
        acting_user=admin, provider_id="corp", group="bots", role="Builder", obj=agent
    ).execute()
    provider.set_user("erin-sub", {"preferred_username": "erin", "groups": ["qa"]})
    page = browser.new_context().new_page()
    sso_sign_in(page, server, "erin-sub")
    page.wait_for_selector("header .who:has-text('erin')")
    erin = User.objects.get(username="erin")
    assert erin.groups.filter(name="Editor").exists()
    GrantRole(acting_user=admin, user=erin, role="Publisher", reason="by hand").execute()

    # Signing out goes through the provider's end_session_endpoint and back to the sign-in page.
    page.click("header .logout button")
    page.wait_for_selector("text=End session")
    ended = urlparse(page.url)
    assert page.url.startswith(provider.discovery()["end_session_endpoint"])
    hints = parse_qs(ended.query)
    assert hints["id_token_hint"][0] and hints["post_logout_redirect_uri"][0].startswith(server)
    shot(page, "sso-provider-end-session")
    page.click("button:has-text('End session')")
    page.wait_for_selector("text=You are signed out")
    assert urlparse(page.url).path == "/accounts/login/"

    # At the provider, erin leaves qa and joins bots: the next sign-in follows.
    provider.set_user("erin-sub", {"preferred_username": "erin", "groups": ["bots"]})
    sso_sign_in(page, server, "erin-sub")
    page.wait_for_selector("header .who:has-text('erin')")
    grants = {(g.role, g.scope, g.source) for g in RoleGrant.objects.filter(user=erin)}
    assert grants == {("Builder", "agent", "sso"), ("Publisher", "global", "hand")}
    revoked = AuditEntry.objects.get(action="governance.role.revoke", target_id=str(erin.pk))
    assert revoked.before["role"] == "Editor"
    assert (
        revoked.after["claims"]["groups"] == ["bots"]
        and revoked.after["claims"]["sub"] == "erin-sub"
    )
    assert "Labels" not in page.locator("header nav").inner_text()


def test_strict_mode_refuses_unmapped_groups_and_an_email_never_links_accounts(
    server, browser, provider, corp, shot
):
    admin = factories.user("admin", role="Admin")
    UpdateSSOProvider(
        acting_user=admin, provider_id="corp", claim_path="groups", strict=True
    ).execute()
    MapSSOGroup(acting_user=admin, provider_id="corp", group="qa", role="Editor").execute()
    provider.set_user("mallory-sub", {"preferred_username": "mallory", "groups": ["marketing"]})
    page = browser.new_context().new_page()
    sso_sign_in(page, server, "mallory-sub")
    page.wait_for_selector("text=Sign-in refused")
    assert "give no role in Sherlock" in page.inner_text("#why")
    shot(page, "sso-refused")
    assert not User.objects.filter(username="mallory").exists()
    refused = AuditEntry.objects.get(action="governance.sso.refused")
    assert refused.after["code"] == "unmapped"
    assert refused.after["claims"]["groups"] == ["marketing"]

    # A local account with the same e-mail address is not who signs in: a new account is made.
    bob = factories.user("bob", role="Publisher", email="bob@example.com")
    provider.set_user(
        "bob-sub",
        {
            "preferred_username": "bob",
            "email": "bob@example.com",
            "email_verified": True,
            "groups": ["qa"],
        },
    )
    other = browser.new_context().new_page()
    sso_sign_in(other, server, "bob-sub")
    other.wait_for_selector("header .who")
    account = SocialAccount.objects.get(provider="corp", uid="bob-sub")
    assert account.user_id != bob.pk
    assert other.inner_text("header .who") == account.user.username != "bob"
    assert not SocialAccount.objects.filter(user=bob).exists()
