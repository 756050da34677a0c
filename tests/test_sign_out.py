"""Signing out, from the site's navigation or from the admin, lands on the sign-in page with a
message, and signing in again leads back to Sherlock's pages (not to Django's "Thanks for
spending some quality time with the web site today")."""

import re

import pytest


def test_the_navigation_and_the_admin_sign_out_through_the_same_form(client, builder):
    client.force_login(builder)
    nav = client.get("/runs/").content.decode()
    admin = client.get("/admin/").content.decode()
    for body in (nav, admin):
        assert re.search(r'<form[^>]*action="/admin/logout/"', body)


@pytest.mark.parametrize("page", ["/runs/", "/admin/"])
def test_signing_out_lands_on_the_sign_in_page_with_a_message(client, builder, page):
    client.force_login(builder)
    client.get(page)
    response = client.post("/admin/logout/", follow=True)
    body = response.content.decode()
    assert response.redirect_chain == [("/accounts/login/?next=/", 302)]
    assert "You are signed out. Sign in again to use Sherlock." in body
    assert "quality time" not in body
    assert 'name="next" value="/"' in body
    assert "_auth_user_id" not in client.session
