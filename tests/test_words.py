"""Words a user understands: money with thousands separators from the one
formatter, every figure of the contract with its unit on the pages, refusals logged as one
line, the admin's titles and a favicon that say Sherlock."""

import io
import logging
from decimal import Decimal

import pytest

from evaluations.costs.texts import format_usd
from evaluations.templatetags.money import usd as usd_filter
from sherlock.core.log import OneLineRefusals
from sherlock.core.money import usd
from tests.support import factories


def test_money_groups_thousands_in_the_kernel_the_costs_and_the_filter():
    assert usd(Decimal("13967.088")) == "$13,967.09"
    assert usd(Decimal("-1200")) == "-$1,200.00"
    assert usd(Decimal("12500"), 2) == "$12,500.00"
    assert format_usd(Decimal("13967.088")) == "$13,967.09"
    assert format_usd(Decimal("1234567.5"), 3) == "$1,234,567.50 + price missing (3 calls)"
    assert usd_filter(Decimal("2500")) == "$2,500.00"


def test_money_reads_to_the_cent_from_a_dollar_and_keeps_small_costs_readable():
    assert usd(Decimal("1.8900")) == "$1.89"  # not "$1.8900"
    assert usd(Decimal("1.125")) == "$1.13"  # halves up, as the contract rounds
    assert usd(Decimal("0.5200")) == "$0.52"
    assert usd(Decimal("0.0123")) == "$0.0123"  # a trial's cost keeps its digits
    assert usd(Decimal("0.00123")) == "$0.0012"
    assert usd(Decimal("0.00004")) == "<$0.0001"  # not zero, so never "$0.0000"
    assert usd(Decimal("0")) == "$0.00"
    assert format_usd(None) == "price missing"


def _console():
    """The project's console handler (LOGGING in the settings), writing to a buffer."""
    handler = next(
        h
        for h in logging.getLogger().handlers
        if any(isinstance(f, OneLineRefusals) for f in h.filters)
    )
    return handler


@pytest.mark.django_db
def test_a_refused_page_is_one_line_on_the_console_not_a_traceback(client):
    handler = _console()
    buffer = io.StringIO()
    old = handler.setStream(buffer)
    try:
        client.force_login(factories.user("bob", role="Builder"))
        assert client.get("/labels/").status_code == 403
    finally:
        handler.setStream(old)
    lines = [line for line in buffer.getvalue().splitlines() if line.strip()]
    assert len(lines) == 1, buffer.getvalue()
    assert "Forbidden" in lines[0] and "/labels/" in lines[0]
    assert "Editor role" in lines[0]  # the reason the view gave
    assert "Traceback" not in buffer.getvalue()


def test_a_real_error_keeps_its_traceback():
    record = logging.LogRecord("django.request", logging.ERROR, "", 0, "boom", (), None)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        import sys

        record.exc_info = sys.exc_info()
    record.status_code = 500
    assert OneLineRefusals().filter(record) and record.exc_info is not None


def test_an_action_refusal_record_loses_its_traceback_and_keeps_its_reason():
    from sherlock.core.errors import ActionDenied

    record = logging.LogRecord("sherlock", logging.WARNING, "", 0, "refused %s", ("x",), None)
    try:
        raise ActionDenied("Only an Admin may approve a bypass.")
    except ActionDenied:
        import sys

        record.exc_info = sys.exc_info()
    OneLineRefusals().filter(record)
    assert record.exc_info is None
    text = logging.Formatter().format(record)
    assert text == "refused x (Only an Admin may approve a bypass.)"


@pytest.mark.django_db
def test_favicon_answers_and_every_base_template_links_it(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 302
    assert response["Location"].endswith("/static/sherlock/favicon.svg")
    client.force_login(factories.user("ada", role="Admin"))
    for path in ("/runs/", "/admin/"):
        body = client.get(path).content.decode()
        assert 'rel="icon" href="/static/sherlock/favicon.svg"' in body, path


@pytest.mark.django_db
def test_the_admin_says_sherlock_in_its_header_and_title(client):
    client.force_login(factories.user("ada", role="Admin"))
    body = client.get("/admin/").content.decode()
    assert "Django administration" not in body and "Django site admin" not in body
    assert "<title>Sherlock administration | Sherlock admin</title>" in body
    assert '<a href="/admin/">Sherlock</a>' in body


@pytest.mark.django_db
def test_the_nav_shows_admin_only_to_those_whose_roles_open_it(client):
    from governance.people.roles import derive_staff

    nobody, builder = factories.user("nobody"), factories.user("bob", role="Builder")
    for person in (nobody, builder):
        derive_staff(person)  # is_staff as the role grants leave it
    client.force_login(nobody)
    body = client.get("/runs/").content.decode()
    assert 'href="/admin/"' not in body and 'href="/runs/"' in body
    assert client.get("/admin/").status_code == 302  # the door the link would lead to is shut
    client.force_login(builder)
    assert 'href="/admin/"' in client.get("/runs/").content.decode()
