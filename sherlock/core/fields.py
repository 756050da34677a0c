"""Model fields the apps share: `MoneyField`, a US-dollar column whose reads never raise.

A value written before figures were bounded (`sherlock.core.numbers`; SQLite stores what it
is given) comes back as it is, and pages say it is out of range (`numbers.is_out_of_range`),
instead of the 500 that Django's SQLite converter raised for a value with more digits than the
column.
"""

import decimal
from functools import cached_property
from typing import Any

from django.db import models

from sherlock.core.numbers import DECIMAL_PLACES, ITEM_DIGITS, TOTAL_DIGITS, USD


class MoneyField(models.DecimalField):  # type: ignore[type-arg]  # the stubs' two parameters are inferred
    """A US-dollar column: one item (14 digits, 8 decimals, `USD`'s validators) or, with
    ``total=True``, a sum of items (24 digits). Reading never raises: Django's SQLite converter
    quantizes in a context of ``max_digits`` digits, which failed on a value written before the
    bounds; this field's context has room for any stored value, returned as it is."""

    def __init__(self, *args: Any, total: bool = False, **kwargs: Any) -> None:
        self.total = total
        kwargs.setdefault("max_digits", TOTAL_DIGITS if total else ITEM_DIGITS)
        kwargs.setdefault("decimal_places", DECIMAL_PLACES)
        super().__init__(*args, **kwargs)

    @cached_property
    def validators(self) -> list[Any]:
        return [*super().validators, *([] if self.total else USD.validators())]

    @cached_property
    def context(self) -> decimal.Context:
        return decimal.Context(prec=self.max_digits + 40)

    def deconstruct(self) -> Any:
        name, path, args, kwargs = super().deconstruct()
        if self.total:
            kwargs["total"] = True
        if kwargs.get("max_digits") == (TOTAL_DIGITS if self.total else ITEM_DIGITS):
            kwargs.pop("max_digits")
        if kwargs.get("decimal_places") == DECIMAL_PLACES:
            kwargs.pop("decimal_places")
        return name, path, args, kwargs
