"""In chromium, the pickers and the words: an Admin grants a role on one agent from a
person's page by typing its name into the admin's autocomplete (no list of every agent), and
reaches that page from the user's admin page (the one place roles change); a user with no role
sees no Admin link; a deactivated person is told so; the invitation and the check form show
every error of one submit. Screenshots: `person-pick-agent`, `person-granted`,
`admin-user-roles-link`, `admin-user-to-people`, `account-deactivated`, `nav-no-role`,
`invite-every-error`, `check-every-error`.
"""

import pytest

from governance.people.roles import derive_staff
from tests.support import factories
from tests.support.browser import log_in, pick

pytestmark = [pytest.mark.slow]


def test_an_admin_grants_a_role_on_an_agent_picked_by_name(server, browser, shot, live_db):
    factories.user("admin", role="Admin")
    dana = factories.user("dana")
    for n in range(30):
        factories.agent(f"bot-{n:02}")
    billing = factories.agent("billing-bot", name="Billing bot")
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    log_in(page, server, "admin", next_url=f"/people/{dana.pk}/")
    page.wait_for_selector("#grant")
    assert page.locator("#id_agent option").count() <= 1  # nothing listed until typed
    page.select_option("#id_grant_role", "Builder")
    page.click("#id_agent + .select2 .select2-selection")
    page.fill(".select2-container--open .select2-search__field", "billing")
    page.wait_for_selector(".select2-results__option >> text=billing-bot")
    shot(page, "person-pick-agent")
    page.click(".select2-results__option >> text=billing-bot")
    page.click("#grant button[name=grant]")
    page.wait_for_selector("#grants")
    assert "agent billing-bot" in page.inner_text("#grants")
    shot(page, "person-granted")
    assert dana.role_grants.filter(role="Builder", agent=billing).exists()


def test_the_admin_user_page_leads_to_the_one_place_roles_change(server, browser, shot, live_db):
    factories.user("admin", role="Admin")
    dana = factories.user("dana")
    qa = factories.dataset("billing-qa")
    factories.dataset("support-basics")
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    log_in(page, server, "admin", next_url=f"/admin/auth/user/{dana.pk}/change/")
    shot(page, "admin-user-roles-link")
    page.click("text=Grant or revoke on the People page")
    page.wait_for_selector("#grant")
    assert page.url.endswith(f"/people/{dana.pk}/")
    page.select_option("#id_grant_role", "Editor")
    pick(page, "dataset", "billing", "billing-qa")
    shot(page, "admin-user-to-people")
    page.click("#grant button[name=grant]")
    page.wait_for_selector("#grants")
    assert "dataset billing-qa" in page.inner_text("#grants")
    assert dana.role_grants.filter(role="Editor", dataset=qa).exists()


def test_a_user_with_no_role_sees_no_admin_link(server, browser, shot, live_db):
    derive_staff(factories.user("nobody"))
    page = browser.new_page(viewport={"width": 1366, "height": 700})
    log_in(page, server, "nobody", next_url="/runs/")
    page.wait_for_selector("header nav")
    assert "Admin" not in page.inner_text("header nav")
    shot(page, "nav-no-role")


def test_forms_show_every_error_of_one_submit(server, browser, shot, live_db):
    factories.user("admin", role="Admin")
    editor = factories.user("editor", role="Editor")
    fast = {"label": "Fast", "kind": "latency", "params": {"max_ms": 100}, "threshold": 1.0}
    draft = factories.dataset_version(
        factories.dataset("refunds"),
        cases=[("refund-1", "Refund?", {})],
        checks=[fast],
        frozen=False,
    )
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    log_in(page, server, "admin", next_url="/people/")
    page.wait_for_selector("#invite")
    page.fill("#id_invite_username", "a b")
    page.eval_on_selector("#invite input[name=email]", "e => e.type = 'text'")  # past the browser
    page.fill("#invite input[name=email]", "nope")
    page.click("#invite button")
    page.wait_for_selector(".field-error")
    text = page.inner_text("#invite")
    assert "letters, digits" in text and "is not an e-mail address" in text
    shot(page, "invite-every-error")

    page = browser.new_page(viewport={"width": 1366, "height": 900})
    log_in(page, server, editor.username, next_url="/admin/evaluations/check/add/")
    page.wait_for_selector("#id_label")
    pick(page, "dataset_version", draft.dataset.slug, str(draft))
    page.fill("#id_label", "Fast")
    page.select_option("#id_kind", "latency")
    page.fill("#id_params", "{oops")
    page.fill("#id_threshold", "5")
    page.click("input[name=_save]")
    page.wait_for_selector(".errorlist")
    for field in ("label", "params", "threshold"):
        assert page.locator(f".field-{field} .errorlist").count() == 1, field
    shot(page, "check-every-error")


def test_a_deactivated_person_is_told_so_and_whom_to_ask(server, browser, shot, live_db):
    factories.user("admin", role="Admin")
    priya = factories.user("priya", role="Editor")
    priya.is_active = False
    priya.save(update_fields=["is_active"])
    page = browser.new_page(viewport={"width": 1366, "height": 700})
    log_in(page, server, "priya")
    page.wait_for_selector("#why")
    shot(page, "account-deactivated")
    said = page.inner_text("#why")
    assert "This account is deactivated" in said and "ask admin" in said
