"""Outcome and tool-effect evidence of one trial, read at the destination (seed 003).

Seed 003: "the transcript may say a flight was booked; the outcome is whether the booking
exists in the database". So the engine never infers an outcome from what the agent said. Right
after the agent call it calls ``collect_evidence(trial, transcript)``, which

- runs the case version's **outcome verifier** (``CaseVersion.outcome_check``) and records
  ``verified``, ``failed`` or ``unavailable`` with the verifier's evidence;
- runs the **effect verifier** (``Tool.verifier``) of every effectful tool the agent called and
  records ``verified``, ``failed`` or ``unknown`` per call; a call the adapter refused because
  the version's tool policy denies the tool (``"denied": true`` on the transcript's call) is
  kept as ``intentionally_denied`` (proof the boundary worked, never a failure);
- reads ``declared_complete``, the owned or unowned ``wait`` and the observation ``windows``
  from the transcript (docs/contract.md has the keys);

and returns the Trial field values to write with the trial, in the same transaction.

A verifier that raises, times out, is refused (HTTP 401/403, a database permission error, a
statement that is not read-only) or is misconfigured gives ``unavailable`` (outcomes) or
``unknown`` (effects) with the reason as evidence: "no verdict was possible" is a coverage
fact, never ``failed`` and never ``verified`` (seed 003: "do not turn unavailable into zero or
into success").

Verifiers are written by Editors (outcome checks) and Builders (tools) but run with Sherlock's
own privileges, so what they may reach is the operator's to list (README, configuration):
``SHERLOCK_VERIFIER_CALLABLES`` (python), ``SHERLOCK_VERIFIER_DATABASES`` (sql; never
``default``, Sherlock's own database, which holds API tokens and password hashes),
``SHERLOCK_VERIFIER_HOSTS`` (http) and ``SHERLOCK_VERIFIER_ENV`` (the variables ``headers_env``
may send, and only to hosts listed by name). ``validate_verifier_spec`` checks a spec against
them; the case actions call it on save (a 400 naming the field) and ``run_verifier`` calls it
again before every run, since settings change and rows can be written by other means. A
refused spec gives no verdict, with the reason.

A verifier is a JSON object with a ``kind``:

``{"kind": "python", "callable": "pkg.module.fn", "params": {...}, "timeout_s": 10}``
    ``fn(context, **params)`` returns ``{"verdict": state, "evidence": ...}``, a
    ``(state, evidence)`` pair or a bool (True: verified, False: failed). It runs in a thread
    and is abandoned (not killed: Python cannot) when it overruns its timeout.
``{"kind": "http", "url": "https://crm/contacts/{call.arguments.contact}", "predicate": P}``
    a GET; 2xx: the JSON body is tested with the predicate; 404: the thing is absent, so
    ``failed``; 401/403, other statuses, a network error, a timeout or a body that is not JSON:
    ``unavailable``. ``headers_env`` maps a header to the *name* of an environment variable
    holding its value (secrets are never stored in a verifier). Redirects are not followed: the
    target was not checked against the host list, and urllib would forward the headers to it.
``{"kind": "sql", "database": "alias", "query": "SELECT ... WHERE id = %s", "params": [...],
"predicate": P}``
    one read-only ``SELECT`` (or ``WITH``) on a database alias of ``settings.DATABASES``,
    run read-only (PostgreSQL ``transaction_read_only`` in a savepoint; SQLite ``query_only``)
    with a statement timeout. The predicate sees ``{"count": n, "rows": [{column: value}]}``;
    without one, the verdict is ``count >= 1``.

The ``observed`` value kept from an HTTP or SQL verifier is cut to ``MAX_OBSERVED_CHARS`` of JSON:
evidence shows what was compared, it does not copy the destination into Sherlock.

A predicate ``P`` is ``{"path": "$.rows[0].amount", "op": "eq", "value": 40}``; ``op`` is one of
``PREDICATE_OPS`` (``exists`` needs no value). String values in ``url``, ``params`` and a
predicate's ``value`` may hold ``{dotted.names}`` from the verifier context: ``case`` (the check
input: ``case.id``, ``case.input...``), ``trial`` (``id``, ``run_id``, ``repetition``,
``started_at``), ``transcript`` and, for effect verifiers, ``call`` (``name``, ``id``,
``arguments``, ``result``). A string that is exactly one ``{name}`` keeps the value's type.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, transaction
from django.http.request import validate_host
from django.utils.module_loading import import_string

from evaluations.choices import EffectState, OutcomeVerdict
from evaluations.contract import read_trial, trial_counts
from sherlock.core.imports import is_allowed

log = logging.getLogger("sherlock.evidence")

VERIFIER_KINDS = ("python", "http", "sql")
PREDICATE_OPS = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "contains", "exists", "truthy")
DEFAULT_TIMEOUT_S = 10.0
MAX_HTTP_BODY = 1_000_000
MAX_OBSERVED_CHARS = 200
WAIT_KEYS = ("owner", "decision_requested", "decision", "deadline", "resumable")

# Outcome verdicts and effect states share "verified"/"failed"; "no verdict possible" is
# `unavailable` for an outcome and `unknown` for an effect (DESIGN section 1).
OUTCOME = "outcome"
EFFECT = "effect"
_NO_VERDICT = {OUTCOME: OutcomeVerdict.UNAVAILABLE.value, EFFECT: EffectState.UNKNOWN.value}


class VerifierUnavailable(Exception):
    """No verdict was possible (misconfigured, refused, timed out, destination unreadable)."""


class InvalidVerifier(ValueError):
    """A verifier spec Sherlock will not run; ``field`` names the key at fault (``database``,
    ``headers_env.Authorization``), and the message starts with it."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field


# --- The entry point -------------------------------------------------------------------------


def collect_evidence(trial, transcript) -> dict[str, Any]:
    """Evidence of one trial as Trial field values; never raises.

    Returns ``declared_complete``, ``outcome_verdict``, ``outcome_evidence``, ``progress``,
    ``wait``, ``tool_effects`` and the contract's per-trial counts (``contract_counts``), ready
    for ``Trial.objects.filter(...).update(**fields)``. ``transcript`` None means the agent call
    failed: nothing was declared and no outcome is claimed. Reads ``trial.case_version`` and
    ``trial.run.agent_version`` (select them with the trial), queries the tools once, and reads
    the trial's ``started_at`` from the database when the instance predates its claim.
    """
    try:
        return _collect(trial, transcript)
    except Exception as exc:  # noqa: BLE001 -- a bug here must not lose the trial
        log.exception("collecting evidence of trial %s failed", getattr(trial, "pk", None))
        return _fail_closed(transcript, f"{type(exc).__name__}: {exc}")


def contract_counts(progress: Mapping, wait: Mapping | None, tool_effects: list) -> dict:
    """The Trial count columns for this progress, wait and tool effects (trial-record shapes),
    computed by the same ``trial_counts`` that counts a trial file."""
    record = read_trial(
        {
            "trial_id": "-",
            "variant": "-",
            "declared_complete": False,
            "outcome": None,
            "quality": None,
            "progress": {"active_windows": 0, "windows_with_evidence_delta": 0, **progress},
            "wait": wait,
            "tool_effects": tool_effects,
            "cost": None,
        }
    )
    return trial_counts(record)


def _started_at(trial):
    """The trial's start as stored: the claim that set it may postdate this instance."""
    if trial.started_at is None and trial.pk is not None:
        return type(trial).objects.filter(pk=trial.pk).values_list("started_at", flat=True).first()
    return trial.started_at


def _collect(trial, transcript) -> dict[str, Any]:
    case_version = trial.case_version
    started_at = _started_at(trial)
    context = {
        "case": case_version.as_check_input(),
        "trial": {
            "id": trial.pk,
            "run_id": trial.run_id,
            "repetition": trial.repetition,
            "started_at": started_at.isoformat() if started_at else None,
        },
        "transcript": transcript or {},
    }
    declared = transcript.get("declared_complete") if transcript else None
    fields = {"declared_complete": declared if isinstance(declared, bool) else None}

    if transcript is None:
        verdict, evidence = (
            (OutcomeVerdict.UNAVAILABLE.value, {"reason": "the agent call failed; no transcript"})
            if case_version.outcome_check
            else ("", {})
        )
    elif not case_version.outcome_check:
        verdict, evidence = (
            OutcomeVerdict.UNAVAILABLE.value,
            {"reason": "the case names no outcome verifier"},
        )
    else:
        verdict, evidence = run_verifier(case_version.outcome_check, context, OUTCOME)
    fields["outcome_verdict"] = verdict
    fields["outcome_evidence"] = evidence

    progress = read_progress(transcript or {})
    wait = read_wait(transcript or {})
    effects = tool_effects(trial.run.agent_version, (transcript or {}).get("tool_calls"), context)
    fields.update(progress=progress, wait=wait, tool_effects=effects)
    fields.update(contract_counts(progress, wait, effects))
    return fields


def _fail_closed(transcript, reason: str) -> dict[str, Any]:
    """What a bug in evidence collection leaves: no outcome verdict possible, and every tool
    call an unknown effect (we cannot tell which ones wrote somewhere)."""
    transcript = transcript if isinstance(transcript, Mapping) else {}
    declared = transcript.get("declared_complete")
    calls = transcript.get("tool_calls") if isinstance(transcript.get("tool_calls"), list) else []
    effects = [
        {
            "call": _call_name(call) or "?",
            "state": EffectState.UNKNOWN.value,
            "intentionally_denied": False,
            "evidence": {"reason": f"evidence collection failed: {reason}"},
        }
        for call in calls
    ]
    fields = {
        "declared_complete": declared if isinstance(declared, bool) else None,
        "outcome_verdict": OutcomeVerdict.UNAVAILABLE.value,
        "outcome_evidence": {"reason": f"evidence collection failed: {reason}"},
        "progress": {},
        "wait": None,
        "tool_effects": effects,
    }
    fields.update(contract_counts({}, None, effects))
    return fields


# --- Transcript keys: windows, wait, tool calls ----------------------------------------------


def read_progress(transcript: Mapping) -> dict[str, int]:
    """The trial's observation windows as a trial record's ``progress`` object.

    ``transcript["windows"]`` is a list of ``{"evidence_delta": str | null, "waiting": bool,
    "stale_collector": bool}``: a stale-collector window is counted apart; a waiting window is
    a wait window (excluded when the wait is owned, a stall otherwise); any other window is an
    active window, with a delta when ``evidence_delta`` names the task-specific change seen.
    """
    windows = transcript.get("windows")
    counts = {
        "active_windows": 0,
        "windows_with_evidence_delta": 0,
        "excluded_wait_windows": 0,
        "stale_collector_windows": 0,
    }
    if not isinstance(windows, list):
        return counts
    for window in windows:
        window = window if isinstance(window, Mapping) else {}
        if window.get("stale_collector"):
            counts["stale_collector_windows"] += 1
        elif window.get("waiting"):
            counts["excluded_wait_windows"] += 1
        else:
            counts["active_windows"] += 1
            if window.get("evidence_delta"):
                counts["windows_with_evidence_delta"] += 1
    return counts


def read_wait(transcript: Mapping) -> dict | None:
    """The transcript's ``wait`` (owner, decision requested, decision, deadline, resumable), or
    None. Whether it is owned is judged by ``wait_is_owned`` (seed 003), not here."""
    wait = transcript.get("wait")
    if not isinstance(wait, Mapping):
        return None
    return {key: wait.get(key) for key in WAIT_KEYS}


def _call_name(call: Any) -> str | None:
    if isinstance(call, str):
        return call
    if not isinstance(call, Mapping):
        return None
    function = call.get("function")
    name = call.get("name") or (function.get("name") if isinstance(function, Mapping) else None)
    return name if isinstance(name, str) else None


def _call_arguments(call: Mapping) -> Any:
    function = call.get("function") if isinstance(call.get("function"), Mapping) else {}
    arguments = call.get("arguments", function.get("arguments"))
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments if arguments is not None else {}


def tool_effects(agent_version, tool_calls, context: Mapping) -> list[dict]:
    """One trial-record effect per effectful (or denied) tool call of the transcript.

    Read-only tools have no effect to verify and are left out. A call marked ``denied`` by
    the adapter is intentionally denied. A tool that is not registered cannot be known to be
    harmless: its effect is ``unknown`` (fail closed). A denied tool called *without* a refusal
    is verified like any other call, and its evidence says the boundary did not hold.
    """
    from agents.models import Tool

    if tool_calls is not None and not isinstance(tool_calls, list):
        # Not a list of calls (a string would iterate as one "call" per character): whatever
        # the agent did, its effects cannot be known.
        return [
            {
                "call": "?",
                "call_id": None,
                "state": EffectState.UNKNOWN.value,
                "intentionally_denied": False,
                "evidence": {"reason": f"tool_calls is a {type(tool_calls).__name__}, not a list"},
            }
        ]
    calls = [call for call in tool_calls or [] if _call_name(call)]
    if not calls:
        return []
    names = {_call_name(call) for call in calls}
    tools = {tool.name: tool for tool in Tool.objects.filter(name__in=names)}
    denied_names = set(agent_version.denied_tools.values_list("name", flat=True))
    effects = []
    for call in calls:
        name = _call_name(call)
        call_id = call.get("id") if isinstance(call, Mapping) else None
        effect = {"call": name, "call_id": call_id}
        tool = tools.get(name)
        if isinstance(call, Mapping) and call.get("denied") is True:
            effects.append(
                {
                    **effect,
                    "state": EffectState.VERIFIED.value,
                    "intentionally_denied": True,
                    "evidence": {"reason": "refused by the version's tool policy"},
                }
            )
            continue
        if tool is None:
            state, evidence = (
                EffectState.UNKNOWN.value,
                {"reason": f"tool {name!r} is not registered"},
            )
        elif not tool.effectful:
            continue
        elif not tool.verifier:
            state, evidence = EffectState.UNKNOWN.value, {"reason": "the tool names no verifier"}
        else:
            call_context = {
                **context,
                "call": {
                    "name": name,
                    "id": call_id,
                    "arguments": _call_arguments(call) if isinstance(call, Mapping) else {},
                    "result": call.get("result") if isinstance(call, Mapping) else None,
                },
            }
            state, evidence = run_verifier(tool.verifier, call_context, EFFECT)
        if name in denied_names:
            evidence = {**evidence, "policy": "the tool is denied for this version but ran"}
        effects.append(
            {**effect, "state": state, "intentionally_denied": False, "evidence": evidence}
        )
    return effects


# --- Verifiers -------------------------------------------------------------------------------


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
        passed, details = runner(spec, context, _timeout(spec))
        evidence.update(details)
        state = EffectState.VERIFIED.value if passed else EffectState.FAILED.value
    except (VerifierUnavailable, InvalidVerifier) as exc:
        state = _NO_VERDICT[target]
        evidence["reason"] = str(exc)
    except Exception as exc:  # noqa: BLE001 -- a raising verifier gives no verdict (seed 003)
        state = _NO_VERDICT[target]
        evidence["reason"] = f"the verifier raised {type(exc).__name__}: {exc}"
    evidence["elapsed_ms"] = round((time.monotonic() - started) * 1000, 1)
    return state, evidence


def describe_verifier(spec: Any) -> str:
    """A short name for the verifier, kept with its evidence ("sql ledger: SELECT ...")."""
    if not isinstance(spec, Mapping):
        return "invalid verifier"
    kind = spec.get("kind")
    if kind == "python":
        return f"python {spec.get('callable')}"
    if kind == "http":
        return f"http GET {spec.get('url')}"
    if kind == "sql":
        return f"sql {spec.get('database')}: {spec.get('query')}"
    return f"unknown verifier kind {kind!r}"


# --- Validation: the shape of a spec, and what the operator allows it to reach -----------------


def validate_verifier_spec(spec: Any) -> None:
    """Raise InvalidVerifier (a ValueError naming the field) unless ``spec`` is a well-formed
    verifier within the operator's allowlists; return None otherwise.

    Cheap and side-effect free except for importing an allowlisted python callable, so that a
    typo is caught on save rather than on the first run.
    """
    if not isinstance(spec, Mapping):
        raise InvalidVerifier("kind", "a verifier is an object with a kind")
    if spec.get("kind") not in VERIFIER_KINDS:
        kinds = ", ".join(VERIFIER_KINDS)
        raise InvalidVerifier("kind", f"a verifier needs a kind, one of {kinds}")
    _timeout(spec)
    {"python": _validate_python, "http": _validate_http, "sql": _validate_sql}[spec["kind"]](spec)
    predicate = spec.get("predicate")
    if predicate is not None:
        if not isinstance(predicate, Mapping):
            raise InvalidVerifier("predicate", "must be an object {path, op, value}")
        if predicate.get("op", "eq") not in PREDICATE_OPS:
            raise InvalidVerifier("predicate.op", f"must be one of {', '.join(PREDICATE_OPS)}")
        path = predicate.get("path", "$")
        if not isinstance(path, str) or not path.startswith("$"):
            raise InvalidVerifier("predicate.path", "must start with $")


def _timeout(spec: Mapping) -> float:
    value = spec.get("timeout_s", DEFAULT_TIMEOUT_S)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 300:
        raise InvalidVerifier("timeout_s", "must be a number of seconds in (0, 300]")
    return float(value)


def _validate_python(spec: Mapping) -> None:
    path = spec.get("callable")
    if not isinstance(path, str) or not path:
        raise InvalidVerifier("callable", "must be a dotted path, e.g. pkg.module.fn")
    # Checked before importing: importing a module runs its code.
    if not is_allowed(path, settings.SHERLOCK_VERIFIER_CALLABLES):
        raise InvalidVerifier(
            "callable",
            f"{path!r} is not allowed (SHERLOCK_VERIFIER_CALLABLES lists the ones that are)",
        )
    try:
        fn = import_string(path)
    except ImportError as exc:
        raise InvalidVerifier("callable", f"cannot import {path!r}: {exc}") from None
    if not callable(fn):
        raise InvalidVerifier("callable", f"{path!r} is not callable")
    if not isinstance(spec.get("params") or {}, Mapping):
        raise InvalidVerifier("params", "must be an object")


def _validate_http(spec: Mapping) -> None:
    headers = spec.get("headers_env") or {}
    if not isinstance(headers, Mapping):
        raise InvalidVerifier("headers_env", "must be an object {header: VARIABLE_NAME}")
    for header, variable in headers.items():
        if not isinstance(variable, str) or variable not in settings.SHERLOCK_VERIFIER_ENV:
            raise InvalidVerifier(
                f"headers_env.{header}",
                f"{variable!r} is not allowed (SHERLOCK_VERIFIER_ENV lists the variables a "
                "verifier may send)",
            )
    _check_url(spec.get("url"), sends_secrets=bool(headers))
    if spec.get("predicate") is None:
        raise InvalidVerifier("predicate", "an HTTP verifier needs a predicate {path, op, value}")


def _check_url(url: Any, sends_secrets: bool) -> None:
    """An http(s) URL whose host is in SHERLOCK_VERIFIER_HOSTS (``*`` allows any host). A
    verifier that sends environment values as headers needs its host listed by name or domain:
    ``*`` never lets a secret leave for a host nobody named. Run on the template on save and on
    the rendered URL at run time (a template value could otherwise pick the host)."""
    try:
        split = urllib.parse.urlsplit(url) if isinstance(url, str) else None
    except ValueError:  # "http://[::1" and the like
        split = None
    if split is None or split.scheme not in ("http", "https") or not split.hostname:
        raise InvalidVerifier("url", "must be an http(s) URL")
    host = f"[{split.hostname}]" if ":" in split.hostname else split.hostname
    patterns = settings.SHERLOCK_VERIFIER_HOSTS
    if not validate_host(host, patterns):
        raise InvalidVerifier(
            "url", f"host {host} is not allowed (SHERLOCK_VERIFIER_HOSTS lists the ones that are)"
        )
    if sends_secrets and not validate_host(host, [p for p in patterns if p != "*"]):
        raise InvalidVerifier(
            "url",
            f"headers_env values are only sent to hosts SHERLOCK_VERIFIER_HOSTS names; {host} "
            "is only allowed by '*'",
        )


_READ_ONLY_START = re.compile(r"^\s*(select|with)\b", re.IGNORECASE)
_SQL_COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.DOTALL)


def _read_only_statement(query: Any) -> str:
    """The query without comments and a trailing semicolon, if it is one SELECT (or WITH); the
    database's read-only session is what really refuses a write (``_read_only_query``)."""
    if not isinstance(query, str):
        raise InvalidVerifier("query", "must be a string")
    bare = _SQL_COMMENT.sub(" ", query).strip().rstrip(";")
    if not _READ_ONLY_START.match(bare) or ";" in bare:
        raise InvalidVerifier("query", "permission denied: only one read-only SELECT is allowed")
    return bare


def _validate_sql(spec: Mapping) -> None:
    alias = spec.get("database")
    if alias == DEFAULT_DB_ALIAS:
        # Even when listed: Sherlock's own database holds API tokens, password hashes and
        # sessions, and no SELECT filter can tell a ledger query from a token theft.
        raise InvalidVerifier(
            "database", "Sherlock's own database ('default') is never readable by a verifier"
        )
    if not isinstance(alias, str) or alias not in settings.SHERLOCK_VERIFIER_DATABASES:
        raise InvalidVerifier(
            "database",
            f"{alias!r} is not allowed (SHERLOCK_VERIFIER_DATABASES lists the aliases that are)",
        )
    if alias not in connections.settings:
        raise InvalidVerifier("database", f"no database alias {alias!r}")
    _read_only_statement(spec.get("query"))
    if not isinstance(spec.get("params") or [], list | tuple):
        raise InvalidVerifier("params", "must be an array")


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
    if state in (OutcomeVerdict.UNAVAILABLE, EffectState.UNKNOWN):
        reason = details if isinstance(details, str) else json.dumps(details, default=str)
        raise VerifierUnavailable(f"the verifier could not decide: {reason}")
    if state not in (EffectState.VERIFIED, EffectState.FAILED):
        raise VerifierUnavailable(f"the verifier returned an unknown state {state!r}")
    return state == EffectState.VERIFIED, {"observed": details}


def _call_with_timeout(fn, args, kwargs, timeout):
    """Call ``fn`` in a daemon thread; past ``timeout`` give up on it (it cannot be killed, so
    it is left to finish on its own and its answer is ignored)."""
    answers: queue.Queue = queue.Queue(maxsize=1)

    def target():
        try:
            answers.put((True, fn(*args, **kwargs)))
        except BaseException as exc:  # noqa: BLE001 -- handed to the caller below
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


def _run_http(spec, context, timeout):
    url = render(spec.get("url"), context, quote=True)
    headers_env = spec.get("headers_env") or {}
    _check_url(url, sends_secrets=bool(headers_env))
    headers = {"Accept": "application/json"}
    for header, variable in headers_env.items():
        value = os.environ.get(variable)
        if value is None:
            raise VerifierUnavailable(f"environment variable {variable} (header {header}) is unset")
        headers[header] = value
    request = urllib.request.Request(url, headers=headers, method="GET")
    try:
        with _http.open(request, timeout=timeout) as response:
            status, body = response.status, response.read(MAX_HTTP_BODY + 1)
    except urllib.error.HTTPError as exc:
        status, body = exc.code, b""
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
    query = _read_only_statement(spec["query"])
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


# --- Templates and predicates ----------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][\w.]*)\}")


def lookup(context: Any, dotted: str) -> Any:
    """``context["a"]["b"][0]`` for ``"a.b.0"``; raises VerifierUnavailable when absent."""
    value = context
    for part in dotted.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list | tuple) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise VerifierUnavailable(f"template value {{{dotted}}} is missing")
    return value


def render(template: Any, context: Mapping, quote: bool = False) -> Any:
    """Fill ``{dotted.names}`` in strings (recursively in lists and objects). A string that is
    exactly one placeholder keeps the value's type; ``quote`` URL-quotes embedded values."""
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template)
        if whole:
            value = lookup(context, whole.group(1))
            return urllib.parse.quote(str(value), safe="") if quote else value

        def fill(match):
            value = str(lookup(context, match.group(1)))
            return urllib.parse.quote(value, safe="") if quote else value

        return _PLACEHOLDER.sub(fill, template)
    if isinstance(template, list | tuple):
        return [render(item, context, quote) for item in template]
    if isinstance(template, Mapping):
        return {key: render(value, context, quote) for key, value in template.items()}
    return template


_PATH_PART = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]|\[\"([^\"]*)\"\]")


def json_path(document: Any, path: str) -> tuple[bool, Any]:
    """A small JSON path: ``$``, ``.name``, ``[index]`` and ``["key"]``. Returns (found, value)."""
    if not isinstance(path, str) or not path.startswith("$"):
        raise VerifierUnavailable(f"predicate path must start with $: {path!r}")
    rest, value = path[1:], document
    while rest:
        match = _PATH_PART.match(rest)
        if not match:
            raise VerifierUnavailable(f"cannot read predicate path {path!r}")
        name, index, quoted = match.groups()
        rest = rest[match.end() :]
        key = name if name is not None else quoted
        if key is not None:
            if not isinstance(value, Mapping) or key not in value:
                return False, None
            value = value[key]
        else:
            if not isinstance(value, list) or int(index) >= len(value):
                return False, None
            value = value[int(index)]
    return True, value


def check_predicate(predicate: Any, document: Any, context: Mapping) -> tuple[bool, Any]:
    """Test ``{"path", "op", "value"}`` against ``document``; returns (passed, observed value).
    A value that is absent fails every op but ``exists`` (which it fails too)."""
    if not isinstance(predicate, Mapping):
        raise VerifierUnavailable("the verifier needs a predicate {path, op, value}")
    op = predicate.get("op", "eq")
    if op not in PREDICATE_OPS:
        raise VerifierUnavailable(f"predicate op must be one of {', '.join(PREDICATE_OPS)}")
    found, observed = json_path(document, predicate.get("path", "$"))
    if op == "exists" or not found:
        return found, observed
    if op == "truthy":
        return bool(observed), observed
    expected = render(predicate.get("value"), context)
    try:
        passed = {
            "eq": lambda: _same(observed, expected),
            "ne": lambda: not _same(observed, expected),
            "gt": lambda: observed > expected,
            "gte": lambda: observed >= expected,
            "lt": lambda: observed < expected,
            "lte": lambda: observed <= expected,
            "in": lambda: any(_same(observed, item) for item in expected),
            "contains": lambda: expected in observed,
        }[op]()
    except TypeError:
        raise VerifierUnavailable(
            f"cannot compare {observed!r} with {expected!r} using {op}"
        ) from None
    return bool(passed), observed


def _same(left: Any, right: Any) -> bool:
    # 40 and "40.00" from a database or an API are the same amount; compare numbers as numbers.
    try:
        return float(left) == float(right) and not isinstance(left, bool | type(None))
    except (TypeError, ValueError):
        return left == right
