"""The audit review page: the audit log for Admins, filtered by actor, action
code, target, date range and request id, each entry's before/after shown as a diff of the keys
that changed, the chain and its checkpoints verified from the page (the same `verify_chain` and
`verify_file` as `manage.py verify_audit`) and the filtered view exported (oldest first, every
field, as `export_audit`) through `governance.audit.export.write_entries`; an export is itself
audited, as in the admin.

Only holders of `governance.view_auditentry` (the Admin role) see it; anyone else gets 404, as
for any object a user may not see. A page of entries is one count and one select. A date filter
that is not a date (`2026-13-45`, `yesterday`) answers the page at 400 with the reason on the
field and no entries, as the API's `?since=` does, for the page and its export alike.
"""

import io
from datetime import datetime, time

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import Http404
from django.utils import timezone
from django.utils.dateparse import parse_date
from django.views.decorators.http import require_POST

from governance.actions.export_audit import ExportAudit
from governance.audit.checkpoints import verify_file
from governance.audit.export import FORMATS, export_response
from governance.models import AuditEntry, verify_chain
from sherlock.core.htmx import render_page
from sherlock.core.limits import excerpt

PAGE_SIZE = 50
FILTERS = ("actor", "action", "target", "since", "until", "request_id", "sign_ins")
# Sign-ins, sign-outs and failed sign-ins: one entry per person per day at least, which crowded
# the governance events out of the page. The page lists them apart (the newest few,
# and how many) unless asked to mix them in (`?sign_ins=show`) or to show only them (an action
# filter of `auth.user.log`); they stay in the log, the chain, the verification and the export.
SIGN_IN_ACTIONS = ("auth.user.login", "auth.user.login_failed", "auth.user.logout")
SIGN_INS_SHOWN = 10
_MISSING = object()


def _require_admin(request):
    if not request.user.has_perm("governance.view_auditentry"):
        raise Http404


class BadFilter(ValueError):
    """A filter the page cannot apply: `field` names it, the message says why."""

    def __init__(self, field, message):
        super().__init__(message)
        self.field = field


def _day_bound(params, name, end):
    text = params.get(name, "").strip()
    if not text:
        return None
    try:
        day = parse_date(text)
    except ValueError:  # the right shape, not a day of the calendar: 2026-13-45
        day = None
    if day is None:
        raise BadFilter(name, f"{name}: {excerpt(text)} is not a date (YYYY-MM-DD).")
    return timezone.make_aware(datetime.combine(day, time.max if end else time.min))


def filtered_entries(params):
    """The entries matching the page's filters (a query dict); unknown or empty filters are
    ignored; a date that is not one raises `BadFilter`."""
    entries = AuditEntry.objects.all()
    if actor := params.get("actor", "").strip():
        entries = entries.filter(actor_repr__icontains=actor)
    if action := params.get("action", "").strip():
        entries = entries.filter(action__startswith=action)
    if target := params.get("target", "").strip():
        kind, _, pk = target.partition(":")
        if pk:
            entries = entries.filter(target_type=kind, target_id=pk)
        else:
            entries = entries.filter(
                Q(target_type__icontains=target) | Q(target_repr__icontains=target)
            )
    if since := _day_bound(params, "since", end=False):
        entries = entries.filter(at__gte=since)
    if until := _day_bound(params, "until", end=True):
        entries = entries.filter(at__lte=until)
    if request_id := params.get("request_id", "").strip():
        entries = entries.filter(request_id=request_id)
    return entries.order_by("-sequence")


def diff(before, after):
    """The keys that differ between two stored JSON values, as (key, old, new) rows (a side
    that is absent counts as an empty object); a value that is not an object is one row keyed
    "value"."""
    if before is None and isinstance(after, dict):
        before = {}
    if after is None and isinstance(before, dict):
        after = {}
    if not isinstance(before, dict) or not isinstance(after, dict):
        if before == after:
            return []
        return [("value", _MISSING if before is None else before, after)]
    rows = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key, _MISSING), after.get(key, _MISSING)
        if old != new:
            rows.append((key, old, new))
    return rows


def _shown(value):
    return "—" if value is _MISSING else value


def sign_ins_apart(params):
    """Whether the page lists sign-ins apart from the main list: unless `sign_ins=show`, or
    the action filter asks for them (`auth.user...`)."""
    asked = params.get("action", "").strip()
    return params.get("sign_ins") != "show" and not asked.startswith("auth.user")


def _render(request, verification=None):
    try:
        entries, error = filtered_entries(request.GET), None
    except BadFilter as exc:
        entries, error = AuditEntry.objects.none(), exc
    apart = sign_ins_apart(request.GET)
    sign_ins = None
    if apart:
        entries = entries.exclude(action__in=SIGN_IN_ACTIONS)
        recent = AuditEntry.objects.filter(action__in=SIGN_IN_ACTIONS).order_by("-sequence")
        sign_ins = {"count": recent.count(), "rows": list(recent[:SIGN_INS_SHOWN])}
    page = Paginator(entries, PAGE_SIZE).get_page(request.GET.get("page"))
    rows = [
        {
            "entry": entry,
            "diff": [(k, _shown(o), _shown(n)) for k, o, n in diff(entry.before, entry.after)],
        }
        for entry in page
    ]
    query = request.GET.copy()
    query.pop("page", None)
    export_query = query.copy()
    export_query.pop("sign_ins", None)  # the export holds every matching entry, sign-ins too
    response = render_page(
        request,
        "governance/audit.html",
        {
            "page": page,
            "rows": rows,
            "filters": {name: request.GET.get(name, "") for name in FILTERS},
            "query": query.urlencode(),
            "export_query": export_query.urlencode(),
            "formats": sorted(FORMATS),
            "verification": verification,
            "error": error,
            "sign_ins": sign_ins,
            "show_sign_ins_query": _with(query, sign_ins="show"),
            "hide_sign_ins_query": _with(query, sign_ins=None),
        },
    )
    if error is not None:
        response.status_code = 400
    return response


def _with(query, **values):
    changed = query.copy()
    for name, value in values.items():
        changed.pop(name, None)
        if value is not None:
            changed[name] = value
    return changed.urlencode()


@login_required
def audit_page(request):
    _require_admin(request)
    return _render(request)


@login_required
@require_POST
def audit_verify(request):
    """Re-compute the whole chain (not only the filtered view: a chain is whole or broken) and
    show the page again with the result."""
    _require_admin(request)
    checked, broken, why = verify_chain()
    verification = {"checked": checked, "broken": broken, "why": why, "entry": None}
    if broken is not None:
        verification["entry"] = AuditEntry.objects.filter(sequence=broken).first()
    # And the configured checkpoint file, as `verify_audit` does: a whole chain says nothing of
    # a cut tail, so the page says whether anything outside the database vouched for it.
    verification["checkpoints"] = verify_file(None)
    return _render(request, verification)


@login_required
def audit_export(request, fmt):
    _require_admin(request)
    if fmt not in FORMATS:
        raise Http404
    try:
        entries = filtered_entries(request.GET)
    except BadFilter:
        return _render(request)  # the page, at 400, saying which filter
    out = io.StringIO()
    ExportAudit(
        acting_user=request.user,
        entries=entries,
        fmt=fmt,
        out=out,
        filters={k: v for k in FILTERS if (v := request.GET.get(k))},
        reason="audit page export",
    ).execute()
    return export_response(out.getvalue(), fmt)
