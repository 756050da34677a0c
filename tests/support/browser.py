"""What the browser tests do as a person: sign in (fixtures: tests/browser/conftest.py)."""

from tests.support import factories


def log_in(page, server, username, next_url=""):
    """Sign in on Sherlock's sign-in page (the admin's login URL leads there too), as a person
    does."""
    page.goto(f"{server}/accounts/login/" + (f"?next={next_url}" if next_url else ""))
    page.fill("#id_username", username)
    page.fill("#id_password", factories.PASSWORD)
    page.click("input[type=submit]")
