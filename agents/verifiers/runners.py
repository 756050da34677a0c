"""Running one verifier: the python, http and sql runners, their timeouts, and what is kept.

``run_verifier(spec, context, target)`` validates the spec against today's allowlists
(``agents.verifiers.spec``), runs it and returns ``(state, evidence)``; it never raises. A
verifier that raises, times out, is refused (HTTP 401/403, a database permission error, a
statement that is not read-only) or is misconfigured gives no verdict (``unavailable`` for an
outcome, ``unknown`` for an effect) with the reason as evidence: "no verdict was possible" is
a coverage fact, never ``failed`` and never ``verified`` ("do not turn unavailable
into zero or into success").

The ``observed`` value kept from an HTTP or SQL verifier is cut to ``MAX_OBSERVED_CHARS`` of
JSON: evidence shows what was compared, it does not copy the destination into Sherlock.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from django.db import DatabaseError, connections, transaction
from django.utils.module_loading import import_string

from agents.verifiers.predicates import check_predicate, render
from agents.verifiers.spec import (
    FAILED,
    NO_VERDICT,
    OUTCOME,
    VERIFIED,
    InvalidVerifier,
    VerifierUnavailable,
    check_url,
    describe_verifier,
    read_only_statement,
    timeout_of,
    validate_verifier_spec,
)
from sherlock.core.egress import header_value_error, read_variable

MAX_HTTP_BODY = 1_000_000
MAX_OBSERVED_CHARS = 200


def run_verifier(spec: Any, context: Mapping, target: str = OUTCOME) -> tuple[str, dict]:
    """Run one verifier; returns ``(state, evidence)`` and never raises.

    ``target`` is ``"outcome"`` (states verified/failed/unavailable) or ``"effect"``
    (verified/failed/unknown). The spec is validated first, against today's allowlists: a spec
    saved before an allowlist shrank, or written around the actions, reaches nothing.
    """
    started = time.monotonic()
    evidence: dict[str, Any] = {"verifier": describe_verifier(spec)}
    try:
        validate_verifier_spec(spec)
        runner = {"python": _run_python, "http": _run_http, "sql": _run_sql}[spec["kind"]]
        passed, details = runner(spec, context, timeout_of(spec))
        evidence.update(details)
        state = VERIFIED if passed else FAILED
    except (VerifierUnavailable, InvalidVerifier) as exc:
        state = NO_VERDICT[target]
        evidence["reason"] = str(exc)
    except Exception as exc:
        state = NO_VERDICT[target]
        evidence["reason"] = f"the verifier raised {type(exc).__name__}: {exc}"
    evidence["elapsed_ms"] = round((time.monotonic() - started) * 1000, 1)
    return state, evidence


def _clip(observed: Any) -> Any:
    """``observed`` as JSON, or its first MAX_OBSERVED_CHARS characters of JSON text when longer:
    enough to show what was compared, never a copy of the destination's rows or documents."""
    text = json.dumps(observed, default=str, ensure_ascii=False)
    if len(text) <= MAX_OBSERVED_CHARS:
        return json.loads(text)
    return text[:MAX_OBSERVED_CHARS] + "…"


# --- Running the three kinds -------------------------------------------------------------------


def _run_python(spec, context, timeout):
    fn = import_string(spec["callable"])  # allowlisted and importable: validated just before
    params = spec.get("params") or {}
    answer = _call_with_timeout(fn, (dict(context),), dict(params), timeout)
    if isinstance(answer, bool):
        return answer, {}
    if isinstance(answer, tuple) and len(answer) == 2:
        state, details = answer
    elif isinstance(answer, Mapping):
        state = answer.get("verdict", answer.get("state"))
        details = answer.get("evidence")
    else:
        raise VerifierUnavailable(f"the verifier returned {type(answer).__name__}, not a verdict")
    if state in NO_VERDICT.values():
        reason = details if isinstance(details, str) else json.dumps(details, default=str)
        raise VerifierUnavailable(f"the verifier could not decide: {reason}")
    if state not in (VERIFIED, FAILED):
        raise VerifierUnavailable(f"the verifier returned an unknown state {state!r}")
    return state == VERIFIED, {"observed": details}


def _call_with_timeout(fn, args, kwargs, timeout):
    """Call ``fn`` in a daemon thread; past ``timeout`` give up on it (it cannot be killed, so
    it is left to finish on its own and its answer is ignored)."""
    answers: queue.Queue = queue.Queue(maxsize=1)

    def target():
        try:
            answers.put((True, fn(*args, **kwargs)))
        except BaseException as exc:
            answers.put((False, exc))
        finally:
            connections.close_all()  # this thread's own connections, if the verifier used any

    threading.Thread(target=target, name="verifier", daemon=True).start()
    try:
        ok, value = answers.get(timeout=timeout)
    except queue.Empty:
        raise VerifierUnavailable(f"timed out after {timeout:g} s") from None
    if not ok:
        if isinstance(value, PermissionError):
            raise VerifierUnavailable(f"permission denied: {value}") from None
        raise value
    return value


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Turn a redirect into its 3xx status: the target is not the host that was allowed."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_http = urllib.request.build_opener(_NoRedirects)


def _run_http(spec, context, timeout):  # noqa: C901
    url = render(spec.get("url"), context, quote=True)
    headers_env = spec.get("headers_env") or {}
    check_url(url, sends_secrets=bool(headers_env), strict=True)
    headers = {"Accept": "application/json"}
    for header, variable in headers_env.items():
        value = read_variable(variable, "SHERLOCK_VERIFIER_ENV")  # validated just before
        if value is None:
            raise VerifierUnavailable(f"environment variable {variable} (header {header}) is unset")
        # Checked here, naming the variable only: http.client's refusal quotes the value.
        problem = header_value_error(value)
        if problem:
            raise VerifierUnavailable(
                f"environment variable {variable} (header {header}) cannot be sent in a "
                f"header: {problem} (the value is not shown)"
            )
        headers[header] = value
    request = urllib.request.Request(url, headers=headers, method="GET")
    try:
        with _http.open(request, timeout=timeout) as response:
            status, body = response.status, response.read(MAX_HTTP_BODY + 1)
    except urllib.error.HTTPError as exc:
        status, body = exc.code, b""
    except ValueError as exc:  # a header http.client refuses; its message quotes the value
        raise VerifierUnavailable(
            f"GET {url}: the request is not valid HTTP ({type(exc).__name__}: a header's value "
            "is not allowed; the value is not shown)"
        ) from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise VerifierUnavailable(f"GET {url} failed: {reason}") from None
    if status == 404:
        return False, {"url": url, "status": 404, "observed": "absent at the destination"}
    if status in (401, 403):
        raise VerifierUnavailable(f"GET {url}: permission denied ({status})")
    if 300 <= status < 400:
        raise VerifierUnavailable(f"GET {url}: redirected ({status}); redirects are not followed")
    if not 200 <= status < 300:
        raise VerifierUnavailable(f"GET {url}: status {status}")
    if len(body) > MAX_HTTP_BODY:
        raise VerifierUnavailable(f"GET {url}: body larger than {MAX_HTTP_BODY} bytes")
    try:
        document = json.loads(body)
    except ValueError:
        raise VerifierUnavailable(f"GET {url}: the body is not JSON") from None
    passed, observed = check_predicate(spec.get("predicate"), document, context)
    return passed, {"url": url, "status": status, "observed": _clip(observed)}


def _run_sql(spec, context, timeout):
    query = read_only_statement(spec["query"])
    params = render(spec.get("params") or [], context)
    connection = connections[spec["database"]]
    try:
        rows, columns = _read_only_query(connection, query, params, timeout)
    except DatabaseError as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise VerifierUnavailable(f"the query failed: {message}") from None
    found = {"count": len(rows), "rows": [dict(zip(columns, row, strict=False)) for row in rows]}
    predicate = spec.get("predicate") or {"path": "$.count", "op": "gte", "value": 1}
    passed, observed = check_predicate(predicate, found, context)
    return passed, {"rows": len(rows), "observed": _clip(observed)}


def _read_only_query(connection, query, params, timeout, max_rows=100):
    """Run ``query`` so that the database itself refuses a write, with a statement timeout.

    PostgreSQL: inside a savepoint that sets ``transaction_read_only`` and ``statement_timeout``
    locally and is always rolled back (so the settings end with it). SQLite: ``query_only`` for
    the duration, and a progress handler that interrupts the statement past the deadline.
    """
    if connection.vendor == "postgresql":
        with transaction.atomic(using=connection.alias):
            sid = transaction.savepoint(using=connection.alias)
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL transaction_read_only = on")
                    cursor.execute(f"SET LOCAL statement_timeout = {int(timeout * 1000)}")
                    cursor.execute(query, params)
                    return cursor.fetchmany(max_rows), [c[0] for c in cursor.description]
            finally:
                transaction.savepoint_rollback(sid, using=connection.alias)
    if connection.vendor == "sqlite":
        connection.ensure_connection()
        raw = connection.connection
        deadline = time.monotonic() + timeout
        raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA query_only = ON")
            try:
                cursor.execute(query, params)
                return cursor.fetchmany(max_rows), [c[0] for c in cursor.description]
            finally:
                cursor.execute("PRAGMA query_only = OFF")
                raw.set_progress_handler(None, 0)
    raise VerifierUnavailable(f"SQL verifiers do not support {connection.vendor}")
