"""A refusal on a form: the one way a page or the admin shows an action's errors to a person."""

import re

from django.core.exceptions import NON_FIELD_ERRORS

from sherlock.core.errors import each_error


def show_refusal(form, exc, *, aliases=None, skip=()):
    """Each error of an action's refusal `exc` (`InvalidFields` holds several) on the field it
    names when that field is on the form (`expected_tools[0]` is the `expected_tools` field;
    `aliases` maps an action's field name to the form's, or to a function of the error), else
    above the form; each message once (the form's own checks may have found it). `skip` names
    the fields whose errors are not shown (`None` for the form's own)."""
    aliases = aliases or {}
    for error in each_error(exc):
        stem = re.sub(r"[^A-Za-z_0-9].*", "", error.field or "")
        named = aliases.get(error.field, aliases.get(stem, stem))
        if callable(named):
            named = named(error)
        field = named if named in form.fields else None
        if field in skip:
            continue
        if str(error) not in form.errors.get(field or NON_FIELD_ERRORS, []):
            form.add_error(field, str(error))
