"""`{% load pickers %}`: the pickers (sherlock.core.pickers) in templates that are not forms.

`{% picker_media %}` is in base.html for signed-in people: select2, its starter and the colours
its theme reads from the admin's stylesheet. `{% picker name kind value text %}` renders a GET
filter's picker (the compare page's runs, the trends page's agent and dataset, ...): the chosen
row's `text` comes from the template, so rendering it queries nothing and lists no rows.
"""

from typing import Any

from django import template
from django.utils.safestring import mark_safe

from sherlock.core import pickers

register = template.Library()

THEME = mark_safe(
    "<style>:root { --body-bg: #fff; --body-fg: #101828; --body-quiet-color: #667085;"
    " --border-color: #d0d5dd; --darkened-bg: #f9fafb; --error-fg: #b42318; --primary: #175cd3;"
    " --primary-fg: #fff; --selected-bg: #eff8ff; }"
    " .select2-container { min-width: 18rem; }</style>"
)


@register.simple_tag
def picker_media() -> str:
    """The pickers' scripts deferred (in order, after the page is parsed: a page without a
    picker does not wait for them), their stylesheets and theme."""
    return str(pickers.picker_media(defer=True).render()) + THEME


@register.simple_tag
def picker(
    name: str,
    kind: str,
    value: Any = "",
    text: Any = "",
    *,
    by: str = "pk",
    placeholder: str = "",
    submit: bool = False,
    required: bool = False,
    width: str = "",
    **params: Any,
) -> str:
    """A `<select name=...>` picking one row of `kind`, showing `value` as `text` when chosen;
    `by` what it posts, `placeholder` the empty choice's words (a filter's "every agent"),
    `submit` sends its form when the choice changes, `required` a choice is needed to send it,
    `width` its width when the text of its rows is long (a run's); other keywords are fixed
    filters."""
    value = "" if value is None else str(value)
    attrs: dict[str, str | bool] = {"id": f"id_{name}"}
    if required:
        attrs["required"] = True
    if width:
        attrs["style"] = f"width: {width}"
    if submit:
        attrs["data-submit"] = "true"
    widget = pickers.Picker(kind, by=by, params=params, placeholder=placeholder, attrs=attrs)
    widget.is_required = required  # select2 offers no clearing of a required choice
    widget.choices = [(value, text or value)] if value else []
    return widget.render(name, value)
