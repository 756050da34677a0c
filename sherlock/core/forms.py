"""A refusal on a form: the one way a page or the admin shows an action's errors to a person."""

import re
from collections.abc import Collection, Mapping
from typing import Any, TypeVar, cast

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS

from sherlock.core.errors import ActionError, each_error

FormT = TypeVar("FormT", bound=forms.BaseForm)


def show_refusal(
    form: forms.BaseForm,
    exc: ActionError,
    *,
    aliases: Mapping[str, Any] | None = None,
    skip: Collection[str | None] = (),
) -> None:
    """Each error of an action's refusal `exc` (`InvalidFields` holds several) on the field it
    names when that field is on the form (`expected_tools[0]` is the `expected_tools` field;
    `aliases` maps an action's field name to the form's, or to a function of the error), else
    above the form; each message once (the form's own checks may have found it). `skip` names
    the fields whose errors are not shown (`None` for the form's own)."""
    aliases = aliases or {}
    for error in each_error(exc):
        stem = re.sub(r"[^A-Za-z_0-9].*", "", error.field or "")
        named = aliases.get(error.field or "", aliases.get(stem, stem))
        if callable(named):
            named = named(error)
        field = named if named in form.fields else None
        if field in skip:
            continue
        if str(error) not in form.errors.get(field or NON_FIELD_ERRORS, []):
            form.add_error(field, str(error))


def with_acting_user(form: type[FormT], user: Any) -> type[FormT]:
    """The form class an admin's `get_form` returns, carrying who acts: its `clean()` runs the
    domain action as that person. The class is this request's own (the admin builds one per
    call), so the attribute reaches no one else."""
    form.user = user  # type: ignore[attr-defined]  # the one place a form class gets its user
    return form


def offer(form: forms.BaseForm, name: str, queryset: Any) -> None:
    """Let the choice field `name` of `form` offer only `queryset`'s rows (what the person may
    pick), which is also what it accepts."""
    cast("forms.ModelChoiceField[Any]", form.fields[name]).queryset = queryset
