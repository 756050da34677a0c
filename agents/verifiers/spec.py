"""The verifier language: what a spec may say, and what the operator allows it to reach.

Verifiers are written by Editors (a case's outcome check) and Builders (a tool's verifier) but
run with Sherlock's own privileges, so what they may reach is the operator's to list:
`SHERLOCK_VERIFIER_CALLABLES` (python), `SHERLOCK_VERIFIER_DATABASES` (sql; never `default`,
which holds API tokens and password hashes), `SHERLOCK_VERIFIER_HOSTS` (http) and
`SHERLOCK_VERIFIER_ENV` (what `headers_env` may send), under the rules every user-written
config follows (`sherlock.core.egress`). `validate_verifier_spec` checks a spec when it is saved
and `runners.run_verifier` again before every run, since settings change; a refused spec gives
no verdict, with the reason.

A verifier is a JSON object of a `kind` (`python`, `http` or `sql`) with an optional predicate
(`{"path": ..., "op": ..., "value": ...}`, `PREDICATE_OPS`) and `{dotted.names}` taken from the
verifier's context. Each kind, the predicate and the context: docs/contract.md, "Outcome
verifiers" and "Effect verifiers".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.utils.module_loading import import_string

from sherlock.core.egress import EgressRefused, check_destination, check_variable
from sherlock.core.imports import is_allowed

VERIFIER_KINDS = ("python", "http", "sql")
PREDICATE_OPS = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "contains", "exists", "truthy")
DEFAULT_TIMEOUT_S = 10.0

# What a verifier concludes about its target. Outcome verdicts and effect states share
# "verified"/"failed"; "no verdict possible" is `unavailable` for an outcome and `unknown` for
# an effect. The Trial columns' choices (evaluations.choices.OutcomeVerdict
# and EffectState) hold the same values; a python verifier may answer with any of them.
OUTCOME = "outcome"
EFFECT = "effect"
VERIFIED = "verified"
FAILED = "failed"
NO_VERDICT = {OUTCOME: "unavailable", EFFECT: "unknown"}


class VerifierUnavailable(Exception):
    """No verdict was possible (misconfigured, refused, timed out, destination unreadable)."""


class InvalidVerifier(ValueError):
    """A verifier spec Sherlock will not run; ``field`` names the key at fault (``database``,
    ``headers_env.Authorization``), and the message starts with it."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field


class VerifierRefused(InvalidVerifier):
    """A verifier an operator's egress rule refuses (an environment variable or a host:
    ``sherlock.core.egress``): invalid like any other, and audited where it is saved
    (``<app>.<noun>.refused``, as an agent version's and a webhook's refusals are), since
    trying to send a secret somewhere is evidence."""


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
    timeout_of(spec)
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


def timeout_of(spec: Mapping) -> float:
    """The spec's ``timeout_s`` in seconds (default DEFAULT_TIMEOUT_S), within (0, 300]."""
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
        try:
            check_variable(variable, "SHERLOCK_VERIFIER_ENV")
        except EgressRefused as exc:
            raise VerifierRefused(f"headers_env.{header}", str(exc)) from None
    check_url(spec.get("url"), sends_secrets=bool(headers))
    if spec.get("predicate") is None:
        raise InvalidVerifier("predicate", "an HTTP verifier needs a predicate {path, op, value}")


def check_url(url: Any, sends_secrets: bool, *, strict: bool = False) -> None:
    """An http(s) URL that SHERLOCK_VERIFIER_HOSTS allows, by the rule every user-written
    destination follows (``sherlock.core.egress.check_destination``): ``*`` allows any host
    whose addresses are public, loopback, link-local and private addresses need listing, and a
    verifier that sends environment values as headers needs its host listed by name (``*``
    never lets a secret leave for a host nobody named). Run on the template on save and on the
    rendered URL at run time, ``strict`` (a template value could otherwise pick the host)."""
    try:
        check_destination(
            url, "SHERLOCK_VERIFIER_HOSTS", sends_secrets=sends_secrets, strict=strict
        )
    except EgressRefused as exc:
        raise VerifierRefused("url", str(exc)) from None


_READ_ONLY_START = re.compile(r"^\s*(select|with)\b", re.IGNORECASE)
_SQL_COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.DOTALL)


def read_only_statement(query: Any) -> str:
    """The query without comments and a trailing semicolon, if it is one SELECT (or WITH); the
    database's read-only session is what really refuses a write (``runners``)."""
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
    read_only_statement(spec.get("query"))
    if not isinstance(spec.get("params") or [], list | tuple):
        raise InvalidVerifier("params", "must be an array")
