"""Filtering lists: django-filter's backend, run only where there is something to filter
(`ListFilterBackend`), an id filter bounded to what a database can be asked (`IdFilter`: 400
beyond a 64-bit signed integer), and a time filter compared in UTC (`UTCDateTimeFilter`)."""

import datetime as dt
from typing import Any, cast

import django_filters
from django import forms
from django.db.models import QuerySet
from django_filters.fields import IsoDateTimeField
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import extend_schema_field

from sherlock.core.inputs import INT64_MAX, INT64_MIN

# An id or count in a path or a query: what every database column can hold.
INT64 = {"type": "integer", "format": "int64", "minimum": INT64_MIN, "maximum": INT64_MAX}


class ListFilterBackend(DjangoFilterBackend):
    """django-filter's backend, run only where there is something to filter. The schema
    documents filters on lists (as drf-spectacular does for any filter backend), yet DRF also
    runs them when it looks up one object, building the whole filter set and its form for
    nothing: a fifth of a detail's time. So a detail answers the object its URL
    names, whatever the query string says; and a list asked with no query parameter but the
    page's is the whole list (an empty filter set filters nothing, since no filter of ours is
    `required`), without building the set."""

    def filter_queryset(self, request: Any, queryset: QuerySet[Any], view: Any) -> QuerySet[Any]:
        if getattr(view, "detail", False):
            return queryset
        paginator = getattr(view, "paginator", None)
        paging = {
            getattr(paginator, name, None)
            for name in ("page_query_param", "page_size_query_param", "cursor_query_param")
        }
        if not set(request.query_params) - paging:
            return queryset
        return cast(QuerySet[Any], super().filter_queryset(request, queryset, view))


@extend_schema_field(INT64)
class IdFilter(django_filters.NumberFilter):
    """A filter on an id or an integer column (`?run=12`): a whole number a database can be
    asked about, else 400 naming the parameter. django-filter's `NumberFilter` takes any
    decimal and Django bounds the lookups of integer columns, not of foreign keys: `run_id=2**63`
    is an `OverflowError` on SQLite."""

    field_class = forms.IntegerField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", INT64_MIN)
        kwargs.setdefault("max_value", INT64_MAX)
        super().__init__(*args, **kwargs)


class UTCDateTimeField(IsoDateTimeField):
    """An ISO 8601 time turned to UTC as it is read: ISO allows offsets up to 23:59, which
    PostgreSQL refuses beyond 15:59 (a DataError, a 500). A time that leaves the calendar once
    in UTC (year 1 at +05:00) is refused as invalid, naming the parameter."""

    def to_python(self, value: Any) -> dt.datetime | None:
        parsed: dt.datetime | None = super().to_python(value)
        if parsed is None or parsed.tzinfo is None:
            return parsed
        try:
            return parsed.astimezone(dt.UTC)
        except OverflowError as exc:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid") from exc


class UTCDateTimeFilter(django_filters.IsoDateTimeFilter):
    """A filter on a time (`?since=2026-12-01T00:00:00+01:00`), compared in UTC."""

    field_class = UTCDateTimeField
