"""The site's 403 and 404 pages: the site's layout and navigation, the reason the view gave, a
way back; the API keeps its JSON error shape for unrouted paths, and the 500 page needs nothing
that could fail again."""

import pytest
from django.template.loader import get_template

from tests.support import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def builder_client(client):
    client.force_login(factories.user("bob", role="Builder"))
    return client


def test_a_page_the_role_may_not_see_says_why_inside_the_site(builder_client):
    response = builder_client.get("/labels/")
    assert response.status_code == 403
    body = response.content.decode()
    assert '<nav aria-label="main">' in body and "Not allowed" in body
    assert "Labelling needs the Editor role (global or of a dataset)." in body
    assert 'href="/runs/"' in body or "Back to the runs" in body


def test_an_admin_page_the_role_may_not_open_is_the_sites_page_not_a_bare_403(builder_client):
    response = builder_client.get("/admin/evaluations/dataset/add/")
    assert response.status_code == 403
    body = response.content.decode()
    assert "Not allowed" in body and '<nav aria-label="main">' in body


def test_a_missing_run_is_a_404_page_with_the_navigation(builder_client):
    response = builder_client.get("/runs/99999/")
    assert response.status_code == 404
    body = response.content.decode()
    assert "Not found" in body and '<nav aria-label="main">' in body
    assert "No Run matches the given query." in body
    assert "/runs/99999/" in body


def test_a_404_without_a_reason_shows_no_exception_class_name(builder_client):
    response = builder_client.get("/governance/audit/")  # Admins only: hidden from others
    assert response.status_code == 404
    body = response.content.decode()
    assert "Http404" not in body and "nothing you may see" in body


def test_an_unrouted_api_path_still_answers_json(builder_client):
    response = builder_client.get("/api/v1/no-such-thing/")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_the_500_page_renders_without_a_context():
    from django.template import Context

    html = get_template("500.html").template.render(Context())
    assert "Something went wrong" in html and "{%" not in html
