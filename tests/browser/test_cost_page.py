"""The cost page in chromium, read from the daily totals (`DailyCost`): a Builder sees each
agent's spend by day and kind, a row without any price as "price missing", and a new line on
the next visit; an Admin reads the role groups' permissions on the read-only Group page.
Screenshots: `costs-daily-totals`, `admin-group-permissions`."""

from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group

from evaluations.costs.ledger import write_cost_lines
from evaluations.models import CostEntry
from tests.support import factories
from tests.support.browser import log_in

pytestmark = [pytest.mark.slow]


def test_a_builder_reads_spend_by_day_and_kind_from_the_totals(server, browser, shot, live_db):
    factories.user("builder", role="Builder")
    alpha, beta = factories.agent("alpha-bot"), factories.agent("beta-bot")
    today = date.today()
    write_cost_lines(
        [
            *(
                CostEntry(
                    kind="agent", day=today - timedelta(days=n % 3), agent=alpha, usd=Decimal(1)
                )
                for n in range(9)
            ),
            CostEntry(kind="scoring", day=today, agent=alpha, usd=Decimal("0.25")),
            CostEntry(kind="scoring", day=today, agent=beta, usd=None, model="unpriced"),
        ]
    )
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    log_in(page, server, "builder", next_url="/costs/")
    page.wait_for_selector("table tbody tr")
    rows = [
        [cell.strip() for cell in row.split("\t")]
        for row in page.locator("table tbody tr").all_inner_texts()
    ]
    day = today.isoformat()
    assert [day, "alpha-bot", "agent", "3", "0 / 0", "$3.00", "0"] in rows
    assert [day, "alpha-bot", "scoring", "1", "0 / 0", "$0.25", "0"] in rows
    assert [day, "beta-bot", "scoring", "1", "0 / 0", "price missing (1 call)", "1"] in rows
    assert len(rows) == 5  # alpha's agent spend on three days, alpha's and beta's scoring
    assert page.locator("svg rect").count() == 4  # a bar a priced (day, kind)
    shot(page, "costs-daily-totals")
    write_cost_lines([CostEntry(kind="agent", day=today, agent=alpha, usd=Decimal(2))])
    page.reload()
    assert "$5.00" in page.inner_text("table")


def test_an_admin_reads_a_role_groups_permissions(server, browser, shot, live_db):
    factories.user("admin", role="Admin")
    group = Group.objects.get(name="Builder")
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    log_in(page, server, "admin", next_url=f"/admin/auth/group/{group.pk}/change/")
    page.wait_for_selector(".field-permissions")
    text = page.inner_text(".field-permissions")
    assert "agents | agent | " in text.lower()
    shot(page, "admin-group-permissions")
