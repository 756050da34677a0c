"""Pickers: a name typed and chosen from the rows the person may see, never a list of them all
("autocomplete wherever a person picks an agent, user, dataset or version").

A picker is a `<select>` that select2 (the copy the admin ships) fills from `/pick/<kind>/`
as the person types: twenty rows a page, searched by every typed word, scoped by the kind's
own `for_user` query, so a page that offers a choice never renders the rows it may choose from
and a person never sees a name their roles hide. The widget renders only the chosen option.

The apps register their kinds (`register`, from each app's `pickers` module, imported by its
AppConfig.ready); the kernel names no app. A kind may take filters from the query string
(``agent=<pk>``, ``state=draft``), either fixed by the widget or read from another field of
the same form (`depends`: the schedule form's version picker lists the chosen agent's
versions). The answer is select2's: ``{"results": [{"id", "text"}], "pagination": {"more"}}``.
"""

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.db.models import Q, QuerySet
from django.http import HttpRequest, JsonResponse
from django.urls import reverse

PAGE = 20
MAX_PAGE = 10_000  # 200,000 rows deep: past it, type more of the name
# A typed "#12" or "12" is a number (a version's number, a run's id); "v3" a version's number.
NUMBER = re.compile(r"^#?(\d{1,9})$")
VERSION = re.compile(r"^v(\d{1,9})$", re.IGNORECASE)


@dataclass(frozen=True)
class Kind:
    """What a picker of one kind lists: `rows(user, params)` (the person's visible rows, ordered,
    narrowed by the query string's filters; raise ValueError for a filter that does not parse),
    the lookups each typed word is matched against, the lookup a typed number matches exactly,
    the values a widget may post (`by`: the primary key, or a slug for a filter form whose URL
    names it), the text of a row, and what the picker says when nothing is found (`none`,
    select2's own "No results found" when empty), which may say what to do."""

    rows: Callable[..., Any]
    words: tuple[Any, ...] = ()
    number: str | None = None
    versions: tuple[Any, ...] | None = None  # the lookups a typed "v3" matches (default: `number`)
    by: tuple[Any, ...] = ("pk",)
    text: Callable[..., Any] = str
    none: str = ""


KINDS: dict[str, Kind] = {}


def register(name: str, kind: Kind) -> Kind:
    KINDS[name] = kind
    return kind


def search(rows: QuerySet[Any], kind: Kind, term: str) -> QuerySet[Any]:
    """Rows matching every word of `term`: each word in one of the kind's text lookups, or, when
    it reads as a number, the kind's number lookup, or as "v3", its version lookups (a run's
    "support v2" is a run of support-bot v2, not run #2)."""
    versions: tuple[str, ...] = (
        kind.versions if kind.versions is not None else (kind.number,) if kind.number else ()
    )
    for word in term.split()[:5]:
        match = Q()
        for lookup in kind.words:
            match |= Q(**{f"{lookup}__icontains": word})
        number, version = NUMBER.match(word), VERSION.match(word)
        if number and kind.number:
            match |= Q(**{kind.number: int(number.group(1))})
        if version is not None:
            for lookup in versions:
                match |= Q(**{lookup: int(version.group(1))})
        rows = rows.filter(match)
    return rows


def answer(request: HttpRequest, kind: str) -> JsonResponse:
    """`GET /pick/<kind>/?term=&page=&by=&<filters>`: one page of the person's rows."""
    if not request.user.is_authenticated:  # before the kind: strangers learn no kind's name
        return JsonResponse({"detail": "sign in first"}, status=403)
    found = KINDS.get(kind)
    if found is None:
        return JsonResponse({"detail": f"no picker named {kind!r}"}, status=404)
    by = request.GET.get("by", "pk")
    if by not in found.by:
        return JsonResponse({"detail": f"by: one of {', '.join(found.by)}"}, status=400)
    try:
        page = max(1, int_param(request.GET, "page", limit=MAX_PAGE) or 1)
        rows = found.rows(request.user, request.GET)
    except ValueError as exc:
        return JsonResponse({"detail": str(exc) or "a filter does not parse"}, status=400)
    rows = search(rows, found, request.GET.get("term", "")[:200])
    start = (page - 1) * PAGE
    chunk = list(rows[start : start + PAGE + 1])  # one more says whether a next page exists
    results = [{"id": getattr(row, by), "text": found.text(row)} for row in chunk[:PAGE]]
    return JsonResponse({"results": results, "pagination": {"more": len(chunk) > PAGE}})


def int_param(params: Mapping[str, Any], name: str, limit: int = 2**63 - 1) -> int | None:
    """The filter `name` as a whole number up to `limit` (an id, a page), None when absent;
    ValueError names it when it is not one (a number past a database's integers is not)."""
    value = params.get(name) or None
    if value is None:
        return None
    if not (value.isascii() and value.isdigit()) or int(value) > limit:
        raise ValueError(f"{name}: a whole number up to {limit}")
    return int(value)


class Picker(forms.Select):
    """A select filled as the person types from `/pick/<kind>/`.

    `by` is what the chosen row posts (its primary key, or its slug); `params` fixed filters;
    `depends` names other fields of the form whose values are sent as filters (and whose change
    clears this one); `first`, when given, is what the picker says instead of asking while one
    of them is empty (the schedule form's versions: "Choose the agent first"); `placeholder` the
    words of the empty choice. With a ModelChoiceField the
    chosen option's text comes from the field's queryset (one query for the chosen row);
    otherwise from the plain (value, text) `choices` given."""

    def __init__(
        self,
        kind: str,
        *,
        by: str = "pk",
        params: Mapping[str, Any] | None = None,
        depends: Iterable[str] = (),
        first: str = "",
        placeholder: str = "",
        attrs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(attrs=attrs)
        self.kind, self.by, self.params = kind, by, dict(params or {})
        self.depends, self.first, self.placeholder = tuple(depends), first, placeholder

    def __deepcopy__(self, memo: dict[int, Any]) -> "Picker":
        copy = super().__deepcopy__(memo)
        copy.params = dict(self.params)
        return copy

    def url(self) -> str:
        query = {"by": self.by, **self.params} if self.by != "pk" else dict(self.params)
        base = reverse("pick", args=[self.kind])
        return f"{base}?{urlencode(query)}" if query else base

    def build_attrs(
        self, base_attrs: dict[str, Any], extra_attrs: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        attrs = super().build_attrs(base_attrs, extra_attrs=extra_attrs)
        classes = attrs.get("class", "")
        attrs.update(
            {
                "class": f"{classes} sherlock-picker".strip(),
                "data-ajax--url": self.url(),
                "data-ajax--cache": "true",
                "data-ajax--delay": 250,
                "data-theme": "admin-autocomplete",
                "data-allow-clear": json.dumps(not self.is_required),
                "data-placeholder": self.placeholder,
                "data-minimum-input-length": 0,
            }
        )
        if self.depends:
            attrs["data-depends"] = ",".join(self.depends)
        if self.first:
            attrs["data-first"] = self.first
        kind = KINDS.get(self.kind)
        if kind is not None and kind.none:
            attrs["data-none"] = kind.none
        return attrs

    def optgroups(
        self, name: str, value: list[Any], attrs: dict[str, Any] | None = None
    ) -> list[tuple[str | None, list[dict[str, Any]], int | None]]:
        """The empty choice and the chosen one(s), never the kind's rows."""
        chosen = {str(v) for v in value if v not in (None, "")}
        options = [self.create_option(name, "", self.placeholder, not chosen, 0)]
        for option_value, label in self.chosen_options(chosen):
            index = len(options)
            options.append(self.create_option(name, option_value, label, True, index))
        return [(None, options, 0)]

    def chosen_options(self, chosen: set[str]) -> list[tuple[Any, str]]:
        if not chosen:
            return []
        queryset = getattr(self.choices, "queryset", None)
        if queryset is None:  # plain (value, text) pairs, from a template
            return [(v, str(text)) for v, text in self.choices if str(v) in chosen]
        field = self.choices.field  # type: ignore[attr-defined]  # a ModelChoiceIterator
        key = field.to_field_name or "pk"
        # The text the picker's answers give the row, so a chosen row reads the same before
        # and after the form is shown again.
        text = KINDS[self.kind].text if self.kind in KINDS else field.label_from_instance
        try:
            rows = queryset.filter(**{f"{key}__in": chosen})
        except (ValueError, TypeError):  # a posted value of the wrong type: nothing chosen
            return []
        return [(getattr(row, key), text(row)) for row in rows]

    @property
    def media(self) -> forms.Media:
        return picker_media()


def picker_media(defer: bool = False) -> forms.Media:
    """select2 as the admin ships it, django.jQuery, and Sherlock's starter (`picker.js`, which
    also starts pickers that htmx swaps in). The file names are the admin's own for the same
    DEBUG, so on an admin page each script is loaded once. `defer`: the scripts run in order
    once the page is parsed (base.html's, so a page without a picker does not wait for them)."""
    extra = "" if settings.DEBUG else ".min"
    scripts: tuple[str, ...] = (
        f"admin/js/vendor/jquery/jquery{extra}.js",
        f"admin/js/vendor/select2/select2.full{extra}.js",
        "admin/js/jquery.init.js",
        "sherlock/picker.js",
    )
    return forms.Media(
        # Django's stubs take paths only; a Script (Django 5.2) renders its own tag.
        js=[forms.Script(path, defer=True) for path in scripts] if defer else list(scripts),  # type: ignore[misc]
        css={
            "screen": (f"admin/css/vendor/select2/select2{extra}.css", "admin/css/autocomplete.css")
        },
    )
