"""Refusals answered 404: an attempt on an object the user may not see is audited, unseen.

A user who may not see an object gets 404, as if it did not exist, so the action that would
have refused them never runs and writes no `*.refused` entry; yet "a Publisher of one agent
tried to publish another's version" is the evidence the audit log is for. So every 404 answered
to a verb (POST, PUT, PATCH, DELETE) is recorded here, once, for the API, the pages and the
admin alike:

- `RequestContextMiddleware` calls `audit_hidden_refusal` on every response: a 404 to a verb
  writes `<app>.<model>.refused` with the actor, the verb, `code: not_found` and the target's
  type and id (cut to a short excerpt: it is the caller's input);
- the target is what the view looked for (`visible_or_404`, `note_hidden`), else the DRF
  view's own model and lookup;
- an object named in a body is looked up among those the caller may see
  (`VisibleSlugRelatedField`, `VisiblePrimaryKeyRelatedField`): one not found answers the
  usual 400 "does not exist" and is audited the same way;
- the admin answers a hidden object with a redirect, so its mixin calls `audit_hidden` itself.

The user sees the same 404 whether the object exists or not; the entry says which, for the
Admins. Reading is not audited: a log of every mistyped URL would bury the attempts that
matter. docs/governance.md, "Audit log".
"""

from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import ResolverMatch
from rest_framework import serializers

from sherlock.core.audit import audit
from sherlock.core.limits import truncate

# The mixins below are mixed into RelatedFields: the type checker reads them as one (at
# run time they are plain classes, first in their subclasses' bases).
if TYPE_CHECKING:
    from rest_framework.relations import RelatedField as _RelatedField
else:
    _RelatedField = object

UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
EXCERPT_CHARS = 40
# Longer than any key Sherlock stores (slugs are at most 100): no such row, not worth a query.
LONGEST_KEY = 255


def _raw(request: Any) -> Any:
    """The Django request under a DRF one: what the middleware sees."""
    return getattr(request, "_request", request)


def note_hidden(request: Any, model: Any, **lookup: Any) -> None:
    """Remember which object a view looked for and could not show (for `audit_hidden_refusal`);
    the first one, when a body names several."""
    raw = _raw(request)
    if getattr(raw, "sherlock_hidden", None) is None:
        raw.sherlock_hidden = (model, lookup)


def visible_or_404(request: Any, queryset: QuerySet[Any], **lookup: Any) -> Any:
    """`queryset.get(**lookup)`, or Http404 with the lookup noted for the audit: the one way
    views and API code look up an object named by the caller (in the URL or in the body)."""
    try:
        return queryset.get(**lookup)
    except (queryset.model.DoesNotExist, ValueError, TypeError, ValidationError):
        note_hidden(request, queryset.model, **lookup)
        raise Http404(
            f"No {queryset.model._meta.verbose_name} found, or not visible to you."
        ) from None


class NotesHiddenObjects(_RelatedField):
    """For a DRF related field whose queryset is what the caller may see: an object it cannot
    find (hidden, or missing) is the usual 400 "does not exist", noted for the audit, so
    naming another agent's version in a body leaves the same trace as naming it in the URL."""

    def to_internal_value(self, data: Any) -> Any:
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError as exc:
            request = self.context.get("request")
            queryset = self.get_queryset()
            if (
                request is not None
                and queryset is not None
                and "does_not_exist" in str(exc.get_codes())
            ):
                note_hidden(request, queryset.model, **{getattr(self, "slug_field", "pk"): data})
            raise


class VisibleSlugRelatedField(NotesHiddenObjects, serializers.SlugRelatedField):
    """A slug among the objects the caller may see (the queryset); others are audited."""


class VisiblePrimaryKeyRelatedField(NotesHiddenObjects, serializers.PrimaryKeyRelatedField):
    """An id among the objects the caller may see (the queryset); others are audited."""


def _stored(model: Any, lookup: dict[str, Any]) -> Any:
    """The row the lookup names, whoever may see it, or None."""
    # No stored key holds a NUL (PostgreSQL stores none, and asking is a DataError, a 500).
    if any(len(str(value)) > LONGEST_KEY or "\x00" in str(value) for value in lookup.values()):
        return None
    try:
        return model._default_manager.filter(**lookup).first()
    except (ValueError, TypeError, ValidationError):
        return None


def audit_hidden(
    request: Any,
    model: Any,
    lookup: dict[str, Any],
    *,
    verb: str,
    code: str = "not_found",
    reason: str | None = None,
) -> None:
    """Write the refusal entry of a hidden (or missing) object: the actor, the attempted verb,
    the target type and a short excerpt of its id; never more of the caller's input. Only for
    a verb (GET is not audited), and once per request (the admin looks an object up twice).
    `code` "permission_denied" is the admin's own 403 on a row the user sees but may not
    change (`sherlock.core.admin.AuditsHiddenObjects`)."""
    raw = _raw(request)
    if request.method not in UNSAFE_METHODS or getattr(raw, "sherlock_hidden_audited", False):
        return
    raw.sherlock_hidden_audited = True
    user = getattr(raw, "user", None)
    actor = user if getattr(user, "is_authenticated", False) else None
    value = next(iter(lookup.values()), "") if lookup else ""
    kind = f"{model._meta.app_label}.{model._meta.model_name}" if model is not None else ""
    obj = _stored(model, lookup) if model is not None and lookup else None
    match = getattr(raw, "resolver_match", None)
    audit(
        f"{kind}.refused" if kind else "sherlock.request.refused",
        actor=actor,
        target=(kind, truncate(value, EXCERPT_CHARS), str(obj)[:300] if obj is not None else ""),
        after={
            "verb": truncate(verb, EXCERPT_CHARS),
            "code": code,
            "method": request.method,
            "view": match.view_name if match is not None else "",
            "exists": obj is not None,
        },
        reason=reason or "Not found, or not visible to the user; answered as not found.",
    )


def _from_view(match: ResolverMatch, response: Any) -> tuple[Any, dict[str, Any]]:
    """The model and lookup of the DRF view that answered (its queryset and `lookup_field`;
    DRF hands the view to the response's renderers), else the URL's first argument with no
    model."""
    view = (getattr(response, "renderer_context", None) or {}).get("view")
    kwarg = getattr(view, "lookup_url_kwarg", None) or getattr(view, "lookup_field", None)
    if view is not None and kwarg and kwarg in match.kwargs:
        queryset = getattr(view, "queryset", None)
        if queryset is None:
            try:
                queryset = view.get_queryset()
            except Exception:
                queryset = None
        if queryset is not None:
            return queryset.model, {view.lookup_field: match.kwargs[kwarg]}
    first = next(iter(match.kwargs.items()), None)
    return None, dict([first]) if first else {}


def verb_of(request: HttpRequest, match: ResolverMatch) -> str:
    """What the caller tried: the DRF action (`publish`, `partial_update`, `destroy`), the
    page's `verb` argument, or the URL's name."""
    actions = getattr(match.func, "actions", None) or {}
    method = (request.method or "").lower()
    return str(actions.get(method) or match.kwargs.get("verb") or match.url_name)


def audit_hidden_refusal(request: HttpRequest, response: HttpResponse) -> None:
    """Called by the middleware on every response: audit a 404 answered to a verb."""
    if response.status_code not in (400, 404) or request.method not in UNSAFE_METHODS:
        return  # the cheap test first: this runs on every response
    match = getattr(request, "resolver_match", None)
    if match is None:  # no such URL at all: no object was asked for
        return
    noted = getattr(request, "sherlock_hidden", None)
    if response.status_code == 400 and noted is None:
        return  # bad input, not an object the caller may not see
    model, lookup = noted if noted is not None else _from_view(match, response)
    audit_hidden(request, model, lookup, verb=verb_of(request, match))
