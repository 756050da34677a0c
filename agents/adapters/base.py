"""What every adapter shares: the error type, config validation, secrets, and the transcript.

An adapter turns one case into one transcript (docs/adapters.md). `prepare(version)` does the
per-version work once (imports, tool lists, HTTP clients) and returns a `PreparedAgent` whose
`call(case, repetition=...)` the run engine calls from many threads at once, so prepared agents
hold no per-call state. The engine awaits `acall` instead, on its event loop.
"""

import json
import re
import time

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from sherlock.core.aio import in_thread
from sherlock.core.egress import (
    EgressRefused,
    check_destination,
    check_variable,
    header_value_error,
    read_variable,
)
from sherlock.core.transcripts import check_figures


class AgentCallError(Exception):
    """The agent under test failed to answer; the trial ends in `error`, its checks too."""


class PreparedAgent:
    """One agent version, ready to be called. Subclasses implement `_call`.

    `model` is the model the version runs on when the config names one: the cost ledger prices
    the agent's token usage with it when the transcript does not report a cost.
    """

    model = None

    def call(self, case, *, repetition=1):
        """Run one case; return a transcript dict with `latency_ms` (measured if not given)."""
        started = time.perf_counter()
        return _transcript(self._call(case, repetition), started)

    async def acall(self, case, *, repetition=1):
        """`call`, awaited on the run engine's event loop: the HTTP adapters send on the loop
        (their `_acall`), the others run `_call` on the engine's bounded blocking pool."""
        started = time.perf_counter()
        return _transcript(await self._acall(case, repetition), started)

    def _call(self, case, repetition):
        raise NotImplementedError

    async def _acall(self, case, repetition):
        return await in_thread(self._call, case, repetition)


def _transcript(result, started):
    elapsed_ms = (time.perf_counter() - started) * 1000
    transcript = dict(result) if isinstance(result, dict) else {"output": result}
    transcript.setdefault("latency_ms", round(elapsed_ms, 3))
    return checked_figures(transcript)


def checked_figures(transcript):
    """`transcript` when its figures are in range; else AgentCallError. An agent's answer is
    outside input: a cost of $2,000,000 or a token count past the column ends this trial as an
    error, with the figure's range, and nothing else."""
    if isinstance(transcript, dict):
        try:
            check_figures(transcript)
        except ValueError as exc:
            raise AgentCallError(
                f"the agent's answer reports a figure out of range: {exc}"
            ) from None
    return transcript


# --- config validation ------------------------------------------------------------------------

ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"

# A value read from the environment when the agent is called, never stored in the config.
SECRET = {
    "type": "object",
    "additionalProperties": False,
    "required": ["env"],
    "properties": {
        "env": {"type": "string", "pattern": ENV_NAME},
        "prefix": {"type": "string", "maxLength": 100},  # its characters: `validate_secret`
    },
}

HEADERS = {
    "type": "object",
    "additionalProperties": {"anyOf": [{"type": "string"}, SECRET]},
}

# Header names whose values are credentials: they must come from the environment.
_SECRET_HEADER = re.compile(r"authorization|token|secret|password|cookie|api[-_]?key", re.I)


def validate_schema(schema, config):
    """Raise ValueError("config.<field>: <problem>") for the first error of `config`."""
    error = best_match(Draft202012Validator(schema).iter_errors(config))
    if error is None:
        return
    raise ValueError(_describe(error))


def schema_errors(schema, config):
    """Every error of `config` against `schema`, each "config.<field>: <problem>", in the
    order of the schema's validation: a form shows them all at once, each on its field."""
    errors = Draft202012Validator(schema).iter_errors(config)
    return [_describe(error) for error in sorted(errors, key=lambda e: list(e.absolute_path))]


def _describe(error):
    path = ["config", *(str(part) for part in error.absolute_path)]
    message = error.message
    if error.validator == "required":
        missing = [name for name in error.validator_value if name not in error.instance]
        path.append(missing[0] if missing else "?")
        message = "is required"
    elif error.validator == "additionalProperties":
        known = set(error.schema.get("properties", {}))
        extra = sorted(name for name in error.instance if name not in known)
        path.append(extra[0] if extra else "?")
        message = "is not a known setting"
    elif error.validator == "anyOf" and error.schema is HEADERS["additionalProperties"]:
        message = 'must be a string or {"env": "VARIABLE", "prefix": "..."}'
    elif error.validator == "pattern" and error.validator_value == "^https?://":
        message = "must start with http:// or https://"
    elif error.validator in PLAIN_BOUNDS:
        message = f"must be {PLAIN_BOUNDS[error.validator]} {error.validator_value}"
    return f"{'.'.join(path)}: {message}"


# The bounds a form says in words ("must be more than 0"), not jsonschema's "0.0 is less than or
# equal to the minimum of 0".
PLAIN_BOUNDS = {
    "exclusiveMinimum": "more than",
    "minimum": "at least",
    "maximum": "at most",
    "exclusiveMaximum": "less than",
}


# RFC 9110's token: what a header's name may be made of.
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# Headers the HTTP library and the connection own: hop-by-hop ones, and where and how much is
# sent. A config that sets them would override the destination Sherlock checked (`Host`) or
# break the framing of the request.
_OWNED_HEADERS = frozenset(
    {
        "connection",
        "content-length",
        "host",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)


def validate_headers(headers, where):
    """Refuse, at save: a name that is not an HTTP token or is a header the connection owns
    (hop-by-hop, `Host`, `Content-Length`), a written value no header may hold (a line break:
    every call would fail, or smuggle a second header), a credential written into the config
    (it would be stored and shown in the admin), and a secret's prefix that no header may hold
    (`validate_secret`)."""
    for name, value in (headers or {}).items():
        if not _HEADER_NAME.fullmatch(name):
            raise ValueError(
                f"{where}.{name[:60]}: not a header name (letters, digits and !#$%&'*+.^_`|~-)"
            )
        if name.lower() in _OWNED_HEADERS:
            raise ValueError(
                f"{where}.{name}: set by the connection itself; a config may not set it"
            )
        if isinstance(value, str) and (problem := header_value_error(value)):
            raise ValueError(f"{where}.{name}: cannot be sent in a header: {problem}")
        if isinstance(value, str) and _SECRET_HEADER.search(name):
            raise ValueError(
                f"{where}.{name}: a credential must be named by environment variable, "
                f'e.g. {{"env": "SUPPORT_BOT_TOKEN", "prefix": "Bearer "}}, never stored'
            )
        if isinstance(value, dict):
            validate_secret(value, f"{where}.{name}")


def validate_secret(spec, where):
    """A secret's `prefix` ("Bearer ", "token=") is visible ASCII and spaces, not beginning
    with a space: a prefix that makes the header illegal (" ", a control character) has the
    HTTP library refuse it with an error that quotes the whole value, secret included. (A
    schema `pattern` cannot say it exactly: its `$` also matches before a final newline.)"""
    prefix = spec.get("prefix", "")
    if prefix and (prefix[0] == " " or not all(" " <= c <= "~" for c in prefix)):
        raise ValueError(
            f"{where}.prefix: must be visible ASCII characters and spaces, not beginning with a "
            'space (e.g. "Bearer ")'
        )


# --- what may leave: one rule (sherlock.core.egress) ------------------------------------------

AGENT_ENV = "SHERLOCK_AGENT_ENV"
AGENT_HOSTS = "SHERLOCK_AGENT_HOSTS"


def secrets_of(headers, where):
    """`{field: variable}` of the environment values `headers` send."""
    return {
        f"{where}.{name}": value["env"]
        for name, value in (headers or {}).items()
        if not isinstance(value, str)
    }


def check_egress(url_field, url, secrets, *, strict=False):
    """Refuse (EgressRefused naming the field) a variable SHERLOCK_AGENT_ENV does not allow
    among `secrets` (`{field: variable}`), or a `url` SHERLOCK_AGENT_HOSTS does not allow (for
    a request carrying secrets: that does not name). `strict` at run time: a host must
    resolve. Called on save (`validate`) and when a version is prepared for a run."""
    for field, variable in secrets.items():
        try:
            check_variable(variable, AGENT_ENV)
        except EgressRefused as exc:
            raise EgressRefused(f"{field}: {exc}") from None
    try:
        check_destination(url, AGENT_HOSTS, sends_secrets=bool(secrets), strict=strict)
    except EgressRefused as exc:
        raise EgressRefused(f"{url_field}: {exc}") from None


def resolve_secret(spec, where):
    """The value of a `{"env", "prefix"}` secret, read now: AgentCallError when the variable is
    unset or no longer allowed (SHERLOCK_AGENT_ENV changed since the version was saved)."""
    try:
        value = read_variable(spec["env"], AGENT_ENV)
    except EgressRefused as exc:
        raise AgentCallError(f"{where}: {exc}") from None
    if value is None:
        raise AgentCallError(f"{where}: environment variable {spec['env']} is not set")
    value = spec.get("prefix", "") + value
    # Checked here, naming the variable only: the HTTP library's own refusal quotes the value.
    problem = header_value_error(value)
    if problem:
        raise AgentCallError(
            f"{where}: the value of environment variable {spec['env']} cannot be sent in a "
            f"header: {problem} (the value is not shown)"
        )
    return value


def resolve_headers(headers, where):
    return {
        name: value if isinstance(value, str) else resolve_secret(value, f"{where}.{name}")
        for name, value in (headers or {}).items()
    }


def case_text(case):
    """The case input as the agent reads it: a string as is, other JSON compactly."""
    value = case.get("input")
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
