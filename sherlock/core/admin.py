"""Admin building blocks shared by the apps: scoping by role grant, read-only screens, and
admin actions that run a domain action on each selected row.

Django's admin never checks object permissions by itself: `has_change_permission(request,
obj)` asks `user.has_perm(codename)` without the object, so a role granted for one agent would
be invisible and a global role would reach every object. `ScopedAdminMixin` answers both
questions through `sherlock.core.permissions` (global OR object grant) instead.
"""

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.core.exceptions import EmptyResultSet, PermissionDenied
from django.core.paginator import Paginator
from django.db import connections, transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.functional import cached_property

from sherlock.core.audit import audit
from sherlock.core.errors import ActionError
from sherlock.core.hidden import audit_hidden, note_hidden
from sherlock.core.permissions import is_global_admin, user_can
from sherlock.core.pickers import KINDS, Picker

# The base of a mixin of ModelAdmins: the type checker reads it as one (at run time it is a
# plain class, first in its subclasses' bases).
if TYPE_CHECKING:
    AdminMixin = admin.ModelAdmin[Any]
else:
    AdminMixin = object


def any_row(request: HttpRequest, key: Any, rows: Callable[[], QuerySet[Any]]) -> bool:
    """Whether the queryset `rows()` has a row, asked once per request for each `key`: the
    admin's sidebar asks every registered model's module, add, change, delete and view
    permissions on every page, and most of them ask the same question ("does this user see an
    agent? a dataset?"): 40 of an admin page's 47 queries, 100 ms of its time on the loaded
    2-core machine (`bench/pages_scale.py`). `key` names the question, so that an answered
    one costs neither a query nor building one (guardian's `get_objects_for_user`). The answer
    is the request's: a grant made meanwhile is seen by the next request, as every page after
    a POST is."""
    memo = request.__dict__.setdefault("_sherlock_any_row", {})
    if key not in memo:
        # A question asked under another key may be the same query (a global grant makes
        # every verb's "agents this user may ..." the whole table): asked once as well.
        queryset = rows()
        try:
            sql, params = queryset.query.sql_with_params()
        except EmptyResultSet:  # `none()` (an inactive user's rows): no row, and no SQL
            memo[key] = False
            return False
        same = (queryset.db, sql, tuple(params))
        if same not in memo:
            memo[same] = queryset.exists()
        memo[key] = memo[same]
    return bool(memo[key])


def any_visible(request: HttpRequest, model: Any, action: str = "view") -> bool:
    """Whether the request's user holds `action` on at least one row of `model`
    (`model.objects.for_user`), asked once per request (`any_row`)."""
    return any_row(
        request, (model, action), lambda: model._default_manager.for_user(request.user, action)
    )


def global_admin(request: HttpRequest) -> bool:
    """`is_global_admin` of the request's user, asked once per request: the sidebar asks it of
    each model the global Admins alone manage (13 queries a page, `any_row`)."""

    memo = request.__dict__
    if "_sherlock_global_admin" not in memo:
        memo["_sherlock_global_admin"] = is_global_admin(request.user)
    return bool(memo["_sherlock_global_admin"])


def _admin_verb(request: HttpRequest, default: str = "change") -> str:
    match = request.resolver_match
    return match.url_name.rsplit("_", 1)[-1] if match and match.url_name else default


class AuditsHiddenObjects(AdminMixin):
    """A verb on an object the user may not see is audited (`sherlock.core.hidden`). The admin
    answers such an object with a redirect ("doesn't exist. Perhaps it was deleted?"), not a
    404, so the middleware never sees it: the lookup notes the object, and the change or delete
    view records the attempt when the request is a POST. So is the admin's own 403 to a POST,
    where the user sees the row but may not change or delete it (`after.code`
    "permission_denied"): the admin refuses before any action could. Both are written after
    the view's transaction has ended, since a 403 rolls it back."""

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> Any:
        obj = super().get_object(request, object_id, from_field)
        if obj is None:
            note_hidden(request, self.model, **{from_field or "pk": object_id})
        return obj

    def _audit_attempt(self, request: HttpRequest, object_id: str | None, *, denied: bool) -> None:
        noted = getattr(request, "sherlock_hidden", None)
        if noted is not None:
            audit_hidden(request, *noted, verb=_admin_verb(request))
        elif denied:
            audit_hidden(
                request,
                self.model,
                {"pk": object_id} if object_id else {},
                verb=_admin_verb(request),
                code="permission_denied",
                reason="The admin refused: the user's role does not allow this.",
            )

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        try:
            response = super().changeform_view(request, object_id, form_url, extra_context)
        except PermissionDenied:
            self._audit_attempt(request, object_id, denied=True)
            raise
        self._audit_attempt(request, object_id, denied=False)
        return response

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        try:
            response = super().delete_view(request, object_id, extra_context)
        except PermissionDenied:
            self._audit_attempt(request, object_id, denied=True)
            raise
        self._audit_attempt(request, object_id, denied=False)
        return response


class ScopedAdminMixin(AuditsHiddenObjects):
    """Changelists start from `for_user`; `has_*_permission(request, obj)` ask `user_can` on the
    governed object. Without an object, a permission means "holds it on at least one object"
    (a Publisher of one agent sees the Agents page, with that one agent on it). A change or
    delete posted for a row the user may not see is audited (`AuditsHiddenObjects`)."""

    # admin verb -> the permission action on the governed object (None: never)
    scope_actions: dict[str, str | None] = {"view": "view", "change": "change", "delete": "delete"}

    def governed(self, obj: Any) -> Any:
        return obj

    def governed_queryset(self, request: HttpRequest, action: str) -> QuerySet[Any]:
        raise NotImplementedError

    def _may(self, request: HttpRequest, what: str, obj: Any) -> bool:
        action = self.scope_actions.get(what)
        if action is None:
            return False
        if obj is None:
            # Keyed by the method that builds the queryset: admins that inherit one ask once.
            key = (type(self).governed_queryset, action)
            return any_row(request, key, lambda: self.governed_queryset(request, action))
        return user_can(request.user, action, self.governed(obj))

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._may(request, "view", obj) or self._may(request, "change", obj)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._may(request, "change", obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._may(request, "delete", obj)


def field_values(
    obj: Any, names: Iterable[str], cleaned: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """What the audit records of `obj`'s fields `names`: a foreign key as its id, a
    many-to-many as the sorted names of its rows (from the form's `cleaned` data when given,
    since the admin saves those after the row), anything else as stored."""
    values: dict[str, Any] = {}
    for name in names:
        field = obj._meta.get_field(name)
        if field.many_to_many:
            rows = cleaned[name] if cleaned is not None and name in cleaned else None
            if rows is None:
                rows = getattr(obj, name).all() if obj.pk else []
            values[name] = sorted(str(row) for row in rows)
        elif field.is_relation:
            values[name] = getattr(obj, field.attname)
        else:
            values[name] = getattr(obj, name)
    return values


class AuditedEdits(AdminMixin):
    """Admin saves and deletes that no domain action makes (an agent's name, a tool, a price)
    are audited all the same: `<app>.<model>.create`, `.update` (the changed fields, before and
    after) and `.delete` (the row as it was), with the signed-in user as the actor, in the
    admin's own transaction, so the entry and the change are kept or lost together. Where an
    action exists the admin calls it instead, and the action writes its own entry."""

    audit_noun = ""  # the code's noun; the model's name when empty

    def _code(self, verb: str) -> str:
        opts = self.model._meta
        return f"{opts.app_label}.{self.audit_noun or opts.model_name}.{verb}"

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        fields = {f.name for f in self.model._meta.get_fields() if f.concrete or f.many_to_many}
        names = [n for n in (form.changed_data if change else form.cleaned_data) if n in fields]
        before = None
        if change:
            stored = type(obj)._default_manager.get(pk=obj.pk)
            before = field_values(stored, names)
        super().save_model(request, obj, form, change)
        after = field_values(obj, names, form.cleaned_data)
        if before is not None:
            # Only what changed: a form may report a field changed that compares equal.
            names = [n for n in names if before[n] != after[n]]
            if not names:
                return
            before = {n: before[n] for n in names}
            after = {n: after[n] for n in names}
        audit(
            self._code("update" if change else "create"),
            actor=request.user,
            target=obj,
            before=before,
            after=after,
        )

    def _audit_delete(self, request: HttpRequest, obj: Any) -> None:
        names = [f.name for f in obj._meta.concrete_fields if not f.primary_key]
        audit(
            self._code("delete"),
            actor=request.user,
            target=obj,
            before={"id": obj.pk, **field_values(obj, names)},
        )

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self._audit_delete(request, obj)
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        # The changelist's "delete selected": one entry per row, then Django's bulk delete, in
        # one transaction (Django runs this action outside one), so a refused delete (a
        # protected row) leaves no entry behind.
        with transaction.atomic():
            for obj in queryset:
                self._audit_delete(request, obj)
            super().delete_queryset(request, queryset)


class ReadOnlyInline(admin.TabularInline):  # type: ignore[type-arg]  # of any model
    """Rows shown under their parent, each a link to its own page; none added, changed or
    deleted there (versions, cases and checks change through their actions)."""

    extra = 0
    show_change_link = True
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class EstimatedCountPaginator(Paginator):  # type: ignore[type-arg]  # of any rows
    """A changelist's paginator that, on PostgreSQL, reads a whole table's number of rows from
    the planner's statistics (`pg_class.reltuples`, set by ANALYZE and autovacuum) instead of
    counting them: the exact `COUNT(*)` of 200,000 trials or 800,000 check results was the
    biggest part of those lists' time (43 and 59 ms of 136 and 106 on a quiet machine, more
    under load; `bench/pages_scale.py`), to print one number. The estimate is taken only when
    it is above `estimate_above` and the list is the whole table: a search, a list filter or a
    user's scope (`within` adds a WHERE for a user without a global grant) is counted exactly,
    as is every list on SQLite and every table never analysed (reltuples -1) or empty.
    `estimated` tells the template to say "about". An estimate above the real count makes
    pages past the end that answer with no rows; one below it hides the last pages (a page
    number past the estimate is the admin's usual "?e=1" redirect)."""

    estimate_above = 10_000
    estimated = False

    @cached_property
    def count(self) -> int:
        rows = self.object_list
        if not isinstance(rows, QuerySet):
            return super().count
        connection, query = connections[rows.db], rows.query
        whole_table = not (
            query.has_filters()
            or query.distinct
            or query.is_sliced
            or query.combinator
            or query.group_by is not None
        )
        if connection.vendor != "postgresql" or not whole_table:
            return super().count
        table = connection.ops.quote_name(rows.model._meta.db_table)
        # One query either way, so a list costs as many queries on a small table as on a big
        # one: the COUNT(*) subquery is an InitPlan that PostgreSQL runs only when the CASE
        # takes its branch ("never executed" in EXPLAIN ANALYZE otherwise). With no WHERE,
        # DISTINCT, slice or GROUP BY, it is the COUNT(*) that `QuerySet.count()` would run.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT CASE WHEN reltuples > %s THEN reltuples::bigint "
                f"ELSE (SELECT COUNT(*) FROM {table}) END, reltuples > %s "
                "FROM pg_class WHERE oid = %s::regclass",
                [self.estimate_above, self.estimate_above, table],
            )
            count, self.estimated = cursor.fetchone()
        return int(count)


class ReadOnlyMixin(AdminMixin):
    """Records of what happened (runs, results, the audit log): shown, never added, changed or
    deleted through the admin."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# The message tag of a message that starts with a name (a slug, a version, an API key's name):
# the admin's template capitalises every message (`capfirst`, "Support-basics v2: frozen."),
# ours (templates/admin/base_site.html) shows one with this tag as it is written.
AS_WRITTEN = "as-written"


def message_as_written(modeladmin: Any, request: HttpRequest, message: str, level: int) -> None:
    """`modeladmin.message_user`, for a message that starts with a name: never capitalised."""
    modeladmin.message_user(request, message, level, extra_tags=AS_WRITTEN)


def run_verb(
    modeladmin: Any,
    request: HttpRequest,
    objects: Iterable[Any],
    make_action: Callable[[Any], Any],
    done: str | Callable[[Any, Any], str],
) -> None:
    """Run one action per selected object; each success or refusal becomes a message (the
    refusal is audited by the action itself), each starting with the object's name as it is
    written (`message_as_written`). `done` says what was done ("frozen"), or is a
    function of the object and what the action returned that gives the whole message (one that
    links the object made, say)."""
    for obj in objects:
        try:
            result = make_action(obj).execute()
        except ActionError as exc:
            message_as_written(modeladmin, request, f"{obj}: {exc}", messages.ERROR)
        else:
            message = done(obj, result) if callable(done) else f"{obj}: {done}."
            message_as_written(modeladmin, request, message, messages.SUCCESS)


def verb_action(
    action_class: Callable[..., Any],
    done: str | Callable[[Any, Any], str],
    *,
    description: str,
    subject: str,
    permission: str | None = None,
    of: Callable[[Any], Any] | None = None,
) -> Callable[..., None]:
    """An admin action that runs `action_class` on each selected row: the row (or `of(row)`)
    is handed to the action as its `subject` keyword, as the acting user's request.
    `permission` names the ModelAdmin's `has_<permission>_permission` that shows the button;
    without it the button shows to whoever sees the changelist, and the action decides."""

    @admin.action(description=description, permissions=[permission] if permission else None)
    def run(modeladmin: Any, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        run_verb(
            modeladmin,
            request,
            queryset,
            lambda obj: action_class(acting_user=request.user, **{subject: of(obj) if of else obj}),
            done,
        )

    return run


class PickerFilter(admin.FieldListFilter):
    """A changelist filter on a foreign key that is typed and picked (a picker of `kind`,
    sherlock.core.pickers) instead of a sidebar listing every row: a case list "by dataset" lists
    no datasets. ``list_filter = [("dataset", PickerFilter.of("dataset"))]``; the ModelAdmin adds
    `picker_media()` to its media. Choosing a row submits the sidebar's form, which keeps the
    list's other parameters; the chosen row's text is the kind's, read as the person may see it
    (one query)."""

    template = "admin/picker_filter.html"
    kind = ""

    @classmethod
    def of(cls, kind: str) -> type["PickerFilter"]:
        return type(f"PickerFilter_{kind}", (cls,), {"kind": kind})

    def __init__(
        self,
        field: Any,
        request: HttpRequest,
        params: dict[str, Any],
        model: Any,
        model_admin: Any,
        field_path: str,
    ) -> None:
        self.lookup_kwarg = f"{field_path}__{field.target_field.name}__exact"
        self.request = request
        super().__init__(field, request, params, model, model_admin, field_path)
        used: dict[str, Any] = (
            self.used_parameters
        )  # {parameter: the values given}, as Django keeps them
        if self.lookup_kwarg in used:  # one row: the one the picker shows
            used[self.lookup_kwarg] = used[self.lookup_kwarg][-1:]

    def expected_parameters(self) -> list[str | None]:
        return [self.lookup_kwarg]

    def choices(self, changelist: Any) -> Iterator[Any]:
        used: dict[str, Any] = self.used_parameters
        value = (used.get(self.lookup_kwarg) or [""])[-1]
        attrs = {"id": f"id_{self.lookup_kwarg}", "data-submit": "true", "style": "width: 95%"}
        widget = Picker(self.kind, placeholder="all", attrs=attrs)
        kind = KINDS[self.kind]
        chosen = kind.rows(self.request.user, {}).filter(pk=value).first() if value else None
        widget.choices = [(value, kind.text(chosen))] if chosen else []
        keep = {k: v for k, v in changelist.params.items() if k != self.lookup_kwarg}
        yield {
            "selected": bool(chosen),
            "picker": widget.render(self.lookup_kwarg, value if chosen else ""),
            "keep": sorted(keep.items()),
        }
