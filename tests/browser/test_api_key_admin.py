"""API keys in the admin, in chromium: an Admin issues a key to a Builder (the key shown once,
in the message), the key works, the changelist shows it without its secret, and revoking it
there stops it. Screenshots: `apikey-add`, `apikey-issued`, `apikey-revoked`.
"""

import re

import pytest

from governance.models import APIKey
from tests.support import factories
from tests.support.browser import log_in, pick
from tests.support.governance import key_client

pytestmark = [pytest.mark.slow]


def test_an_admin_issues_a_key_once_and_revokes_it(server, browser, shot, live_db):
    factories.user("admin", role="Admin")
    builder = factories.user("builder", role="Builder")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    log_in(page, server, "admin", next_url="/admin/governance/apikey/add/")
    page.wait_for_selector("#id_name")
    pick(page, "user", "build", "builder")  # the owner is typed and picked, not an id
    page.fill("#id_name", "nightly gate")
    page.fill("#id_days", "30")
    shot(page, "apikey-add")
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist")

    message = page.inner_text(".messagelist")
    assert "cannot be shown again" in message
    secret = re.search(r"\b([A-Za-z0-9]{8}\.[A-Za-z0-9]{32})\b", message).group(1)
    key = APIKey.objects.get(user=builder)
    assert key.name == "nightly gate" and secret.startswith(key.prefix)
    assert secret not in (key.pk, key.hashed_key)
    assert key_client(secret).get("/api/v1/agents/").status_code == 200
    table = page.inner_text("#result_list")
    assert "nightly gate" in table and key.prefix in table and secret not in table
    shot(page, "apikey-issued")

    page.goto(f"{server}/admin/governance/apikey/")  # a fresh page: the key is not shown again
    assert secret not in page.inner_text("#content")
    page.check(f"input[name=_selected_action][value='{key.pk}']")
    page.select_option("select[name=action]", "revoke_keys")
    page.click("button[name=index]")
    page.wait_for_selector(".messagelist")
    assert "revoked" in page.inner_text(".messagelist")
    assert "revoked" in page.inner_text("#result_list")
    shot(page, "apikey-revoked")
    key.refresh_from_db()
    assert key.revoked and key.revoked_by.username == "admin"
    assert key_client(secret).get("/api/v1/agents/").status_code == 401
