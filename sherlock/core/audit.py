"""The one audit trail, reachable from every app.

The `AuditEntry` model lives in `governance`, at the top of the dependency
line, yet actions in every app must write to it in their own transaction ("evaluations.case.update",
"agents.version.create"). So this module, at the bottom of the line, resolves the model through
the app registry instead of importing it: the one sanctioned upward reference besides the
`run_finished` signal. The request id, the client address and the signed-in user travel in
context variables set by `sherlock.core.middleware.RequestContextMiddleware`, so actions need not be
handed the request. Actions name their actor themselves; `current_actor()` is for the audit of
changes no action made (the catch-all receivers of `governance.receivers`).
"""

import contextlib
import contextvars
import ipaddress
from collections.abc import Iterable, Iterator
from typing import Any

from django.apps import apps
from django.conf import settings
from django.http import HttpRequest

from sherlock.core.text import scrub, scrub_text

_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("sherlock_request_id", default="")
_client_ip: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "sherlock_client_ip", default=None
)
_actor: contextvars.ContextVar[Any] = contextvars.ContextVar("sherlock_actor", default=None)


@contextlib.contextmanager
def request_context(
    *, request_id: str = "", ip: str | None = None, actor: Any = None
) -> Iterator[None]:
    """`actor`: the acting user, or a function returning it, called only when an entry asks
    (`current_actor`)."""
    tokens = (_request_id.set(request_id), _client_ip.set(ip), _actor.set(actor))
    try:
        yield
    finally:
        _request_id.reset(tokens[0])
        _client_ip.reset(tokens[1])
        _actor.reset(tokens[2])


def current_request_id() -> str:
    return _request_id.get()


def current_actor() -> Any:
    """The signed-in user of the current request, or None (no request, or anonymous)."""
    actor = _actor.get()
    if callable(actor):
        actor = actor()
    if actor is None or not getattr(actor, "is_authenticated", False):
        return None
    return actor


def current_ip() -> str | None:
    return _client_ip.get()


def _trusted(addr: str, proxies: Iterable[str]) -> bool:
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        return False
    for proxy in proxies:
        try:
            if ip in ipaddress.ip_network(proxy, strict=False):
                return True
        except ValueError:
            continue
    return False


def client_address(request: HttpRequest) -> str | None:
    """The client's address: REMOTE_ADDR, or, behind a configured trusted proxy, the right-most
    X-Forwarded-For hop that is not itself a trusted proxy. A raw X-Forwarded-For from an
    untrusted peer is ignored: anyone can write that header."""
    remote: str | None = request.META.get("REMOTE_ADDR") or None
    proxies = settings.SHERLOCK_TRUSTED_PROXIES
    if not remote or not proxies or not _trusted(remote, proxies):
        return remote
    hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if h.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, proxies):
            try:
                return str(ipaddress.ip_address(hop))
            except ValueError:
                return remote
    return remote


def without_nul(value: Any) -> Any:
    """`value` with every NUL and lone surrogate in its text (strings, and the keys and items of
    dicts, lists and tuples) replaced by U+FFFD, the project's one rule for recorded text
    (`sherlock.core.text`). An entry quoting the caller's input (a hidden object's id, a refused
    username) must still be written: the middleware refuses NULs in URLs and forms
    (`sherlock.core.inputs`), this is the last line of defence for any other way one reaches
    an entry."""
    return scrub(value)


def _target_without_nul(target: Any) -> Any:
    """A model instance whose text holds a NUL (possible on SQLite) becomes the (type, id,
    text) tuple the log stores, cleaned; a tuple is cleaned; anything else is as given."""
    if target is None or isinstance(target, tuple):
        return without_nul(target)
    text, pk = str(target), str(target.pk)
    if scrub_text(text) == text and scrub_text(pk) == pk:
        return target
    opts = target._meta
    return (f"{opts.app_label}.{opts.model_name}", without_nul(pk), without_nul(text)[:300])


def audit(
    action: str,
    *,
    actor: Any = None,
    target: Any = None,
    before: Any = None,
    after: Any = None,
    reason: str = "",
) -> Any:
    """Append one entry to the hash-chained audit log, in the caller's transaction. No NUL is
    written (`without_nul`)."""
    entry_model = apps.get_model("governance", "AuditEntry")
    return entry_model.objects.append(
        without_nul(action),
        actor=actor,
        target=_target_without_nul(target),
        before=without_nul(before),
        after=without_nul(after),
        reason=without_nul(reason),
        request_id=current_request_id(),
        ip=current_ip(),
    )
