"""What the browser tests do as a person: sign in (fixtures: tests/browser/conftest.py)."""

from tests.support import factories


def log_in(page, server, username, next_url=""):
    """Sign in on Sherlock's sign-in page (the admin's login URL leads there too), as a person
    does."""
    page.goto(f"{server}/accounts/login/" + (f"?next={next_url}" if next_url else ""))
    page.fill("#id_username", username)
    page.fill("#id_password", factories.PASSWORD)
    page.click("input[type=submit]")


def pick(page, name, typed, choice=None):
    """Choose in the admin's autocomplete of field `name` (Select2) as a person does: open it,
    type `typed`, click the option that reads `choice` (default: `typed`)."""
    page.click(f"#id_{name} + .select2 .select2-selection")
    page.fill(".select2-container--open .select2-search__field", typed)
    page.click(f".select2-results__option >> text={choice or typed}")
