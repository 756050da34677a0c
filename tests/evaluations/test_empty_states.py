"""An empty list says when the reason is a missing role: an outsider's /runs/ and
/costs/ say their roles cover no agent and who may grant one, not "No runs yet" while runs
exist; someone who sees the agents and has no run yet still reads "No runs yet"."""

import pytest

from tests.support import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def a_run(builder, pair, django_capture_on_commit_callbacks):
    _, live, _, v1 = pair
    return factories.start_run(builder, live, v1, django_capture_on_commit_callbacks)


def test_an_outsiders_runs_page_says_it_is_their_roles_and_who_grants_them(
    logged_in, outsider, admin_user, a_run
):
    body = logged_in(outsider).get("/runs/").content.decode()
    assert "No runs yet." not in body
    assert "You see no runs because your roles cover no agent" in body
    assert f"Ask an Admin ({admin_user.username}) to grant you" in body
    assert "on the People page (/people/)" in body  # where an Admin grants it
    # A reader of a dataset sees its runs too: the words say so, and name the Viewer role.
    assert "(Viewer, Editor, Builder, Publisher or Admin)" in body
    assert "and for the datasets it covers" in body


def test_an_outsiders_costs_page_says_the_same(logged_in, outsider, admin_user, a_run):
    body = logged_in(outsider).get("/costs/").content.decode()
    assert "No costs recorded yet." not in body
    assert "You see no costs because your roles cover no agent" in body
    assert admin_user.username in body


def test_a_builder_without_runs_reads_no_runs_yet(logged_in, builder, pair):
    body = logged_in(builder).get("/runs/").content.decode()
    assert "No runs yet." in body and "your roles cover no agent" not in body


def test_the_admins_named_are_only_those_who_may_grant_roles(
    logged_in, outsider, admin_user, publisher, a_run
):
    factories.user("former-admin", role="Admin", is_active=False)
    body = logged_in(outsider).get("/runs/").content.decode()
    named = body.split("Ask an Admin (", 1)[1].split(")", 1)[0]
    assert named == admin_user.username  # not the Publisher, not an inactive account
