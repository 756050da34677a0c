"""What the apps' serializers mix in: `RefuseUnknownFields` (an input serializer refuses a field it
does not know: a typo would otherwise be silently ignored) and `LeanRepresentation` (reading
without DRF's per-row overhead, measured in its comment)."""

import copy
import decimal
from collections.abc import Mapping
from functools import cached_property
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from django.core.exceptions import (
    FieldDoesNotExist,
    ObjectDoesNotExist,
)
from rest_framework import serializers
from rest_framework.fields import SkipField
from rest_framework.relations import PKOnlyObject, RelatedField

from sherlock.core.api.errors import ERRORS_MAX, FIELD_MAX
from sherlock.core.numbers import DECIMAL_PLACES, ITEM_DIGITS, TOTAL_DIGITS

# The mixins below are mixed into ModelSerializers: the type checker reads them as one (at
# run time they are plain classes, first in their subclasses' bases).
if TYPE_CHECKING:
    from rest_framework.serializers import ModelSerializer as _Serializer
else:
    _Serializer = object


class MoneyField(serializers.DecimalField):
    """US dollars as the API writes them: an item (`sherlock.core.fields.MoneyField`, 14
    digits) or a total (``total=True``, 24). Rendering never raises: DRF quantizes in a context
    of ``max_digits`` digits, which failed (a 500) on a value stored before the bounds."""

    def __init__(self, *, total: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("max_digits", TOTAL_DIGITS if total else ITEM_DIGITS)
        kwargs.setdefault("decimal_places", DECIMAL_PLACES)
        super().__init__(**kwargs)

    def quantize(self, value: decimal.Decimal) -> decimal.Decimal:
        context = decimal.Context(prec=(self.max_digits or 0) + 40)
        return value.quantize(
            decimal.Decimal(1).scaleb(-self.decimal_places), rounding=self.rounding, context=context
        )


class RefuseUnknownFields(_Serializer):
    """Mixed into an input serializer: a field it does not know is refused (400, code
    `unknown_field`, naming it) instead of silently ignored. Read-only fields count as known,
    so an object read from the API may be sent back as it is."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            unknown = [name for name in data if name not in self.fields]
            if unknown:
                raise serializers.ValidationError(
                    {str(name)[:FIELD_MAX]: "Unknown field." for name in unknown[:ERRORS_MAX]},
                    code="unknown_field",
                )
        return super().to_internal_value(data)


# Mixed into a serializer that reads rows (before `serializers.Serializer` or
# `ModelSerializer`): DRF's own `to_representation`, field by field with the fields' own
# `to_representation`, with its per-row overhead taken out. DRF walks `self.fields` through
# `Mapping.values()` and a generator for every row, and looks each attribute up through
# `get_attribute`, which tests every step for a Mapping and a callable: on a page of 50 rows and
# 20 fields that was half the serializer's time. Here the readable fields are listed
# once per serializer, and a field that reads a plain attribute path (DRF's base
# `get_attribute`, a dotted `source`) reads it with `operator.attrgetter`; anything else, and
# any attribute that is missing, None on the way, or callable, goes through the field's own
# `get_attribute`, so the answer is DRF's in every case (tests/test_api_lean.py compares them).
# A date-time field asks for the active time zone once per answer, not per value, and a field
# whose representation of a value is that value (an int of an IntegerField, a str of a
# CharField) is not asked.
#
# A `ModelSerializer` also builds its fields from the model on every instance (the model's field
# info, then one field class and its arguments per name: a third of a detail's serializer time);
# here they are built once per class, and each instance gets copies, as DRF gives each instance
# copies of the declared fields.
# Measured with and without in one run (`bench/api_lean.py`, 2026-12-02, 5,000 entries, the
# loaded 2-core machine): CPU per request of the audit list 3.96 ms against 5.50 ms on DRF's own
# `to_representation` (28 % less), the audit detail 2.67 against 3.37 ms.
# (A comment, not a docstring: drf-spectacular would take a docstring as the description of
# every serializer that mixes this in.)
class LeanRepresentation(_Serializer):
    def get_fields(self) -> dict[str, Any]:
        built = _BUILT_FIELDS.get(type(self))
        if built is None:
            built = _BUILT_FIELDS[type(self)] = super().get_fields()
        return {name: copy.deepcopy(field) for name, field in built.items()}

    @cached_property
    def _lean_fields(self) -> list[tuple[Any, ...]]:
        plan = []
        for field in self.fields.values():
            if field.write_only:
                continue
            if isinstance(field, serializers.DateTimeField) and not hasattr(field, "timezone"):
                # DRF asks for the active time zone on every value (a context-local lookup,
                # a tenth of a page of runs); it is the same for the whole answer.
                field.timezone = field.default_timezone()
            plain = (
                type(field).get_attribute is serializers.Field.get_attribute
                and field.source != "*"
                and all(part.isidentifier() for part in field.source_attrs)
            )
            same = _SAME_TYPE.get(type(field))
            if type(field) is serializers.JSONField and field.binary:
                same = None
            read = attrgetter(field.source) if plain else None
            key = self._foreign_key_column(field)
            if key is not None:
                # DRF reads a foreign key's id (its "pk only" shortcut) and answers that id.
                read, same = attrgetter(key), object
            whole = field.source == "*" and (
                type(field).get_attribute is serializers.Field.get_attribute
            )  # DRF's lookup of "*" is the row itself
            convert = field.to_representation
            if type(field) is serializers.SerializerMethodField:
                convert = getattr(self, field.method_name)  # what its to_representation calls
            related = isinstance(field, RelatedField)
            plan.append((field.field_name, field, read, same, whole, convert, related))
        return plan

    def _foreign_key_column(self, field: Any) -> str | None:
        """The column of the foreign key a plain `PrimaryKeyRelatedField` of this model
        serializer shows (`agent_version_id`), or None."""
        model = getattr(getattr(self, "Meta", None), "model", None)
        if (
            type(field) is not serializers.PrimaryKeyRelatedField
            or field.pk_field is not None
            or len(field.source_attrs) != 1
            or model is None
        ):
            return None
        try:
            model_field = model._meta.get_field(field.source_attrs[0])
        except FieldDoesNotExist:
            return None
        return model_field.attname if model_field.many_to_one else None

    def to_representation(self, instance: Any) -> Any:
        if isinstance(instance, Mapping):
            return super().to_representation(instance)
        row: dict[str, Any] = {}
        for name, field, read, same, whole, convert, related in self._lean_fields:
            if whole:
                row[name] = convert(instance)  # never None: the row itself
                continue
            attribute = _MISSING
            if read is not None:
                try:
                    attribute = read(instance)
                except (AttributeError, ObjectDoesNotExist):
                    attribute = _MISSING  # the field's own lookup decides: default, null, skip
                if callable(attribute):
                    attribute = _MISSING
            if attribute is _MISSING:
                try:
                    attribute = field.get_attribute(instance)
                except SkipField:
                    continue
            if attribute is None or (
                related and isinstance(attribute, PKOnlyObject) and attribute.pk is None
            ):
                row[name] = None
            elif same is not None and (same is object or type(attribute) is same):
                row[name] = attribute  # what the field's to_representation would return
            else:
                row[name] = convert(attribute)
        return row


_MISSING = object()


# DRF fields whose `to_representation` returns a value of this exact type unchanged (`int(v)`,
# `str(v)`, a bool as itself, a non-binary JSON value as itself): the call is skipped for them.
# Exact classes only: a subclass may represent differently.
_SAME_TYPE = {
    serializers.IntegerField: int,
    serializers.CharField: str,
    serializers.BooleanField: bool,
    serializers.FloatField: float,
    serializers.JSONField: object,
}


# serializer class -> its fields as `get_fields` first built them (the copies' originals).
_BUILT_FIELDS: dict[type, dict[str, Any]] = {}
