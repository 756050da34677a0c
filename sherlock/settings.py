"""Sherlock's settings: one module, driven by environment variables.

Every variable is read through a small helper that fails loudly (ImproperlyConfigured) on a
value it cannot parse, so a typo in a deployment stops the process at start-up instead of
silently falling back to a default.

The embedded default needs nothing but Python: a SQLite file next to the code and django-q2's
ORM broker. Setting `DATABASE_URL=postgres://...` and `REDIS_URL=redis://...` moves the same
code to PostgreSQL and the Redis broker, which is what more than one machine needs.
"""

import ipaddress
import logging
import os
from pathlib import Path
from urllib.parse import urlparse

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from sherlock.core import egress

BASE_DIR = Path(__file__).resolve().parent.parent

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name, default=""):
    return os.environ.get(name, default)


def env_bool(name, default=False):
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no)")


def env_int(name, default, minimum=None, maximum=None):
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below the minimum {minimum}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={value} is above the maximum {maximum}")
    return value


def env_list(name, default=()):
    raw = os.environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_choice(name, default, choices):
    value = os.environ.get(name, default).strip() or default
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} is not one of {', '.join(choices)}")
    return value


def env_url(name, default="", schemes=()):
    raw = os.environ.get(name, default)
    if not raw:
        return raw
    parsed = urlparse(raw)
    if not parsed.scheme or (schemes and parsed.scheme not in schemes):
        allowed = ", ".join(schemes) or "any scheme"
        raise ImproperlyConfigured(f"{name}={raw!r} is not a URL ({allowed})")
    return raw


DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG and env_bool("SHERLOCK_REQUIRE_SECRET_KEY", False):
        raise ImproperlyConfigured("SECRET_KEY must be set")
    # A local, non-secret key keeps `make run` and the tests working out of the box; a real
    # deployment sets SECRET_KEY (and SHERLOCK_REQUIRE_SECRET_KEY=1 to insist on it).
    SECRET_KEY = "sherlock-insecure-local-key-set-SECRET_KEY-in-production"
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# The client address of audit entries: REMOTE_ADDR, unless the request came through one of these
# proxies, in which case the right-most untrusted X-Forwarded-For hop is used (governance.audit).
SHERLOCK_TRUSTED_PROXIES = env_list("SHERLOCK_TRUSTED_PROXIES", [])

# Checkpoints of the audit chain's head (governance.audit.checkpoints, docs/governance.md "Audit
# checkpoints"): HMAC-SHA256 under SHERLOCK_AUDIT_KEY, a key the database never sees, appended to
# SHERLOCK_AUDIT_CHECKPOINT_FILE (and sent to webhook endpoints subscribed to `audit.checkpoint`)
# at most every SHERLOCK_AUDIT_CHECKPOINT_MINUTES when the head moved. No key: checkpoints off,
# and verify_audit says so.
SHERLOCK_AUDIT_KEY = env_str("SHERLOCK_AUDIT_KEY")
if SHERLOCK_AUDIT_KEY and len(SHERLOCK_AUDIT_KEY) < 32:
    raise ImproperlyConfigured(
        "SHERLOCK_AUDIT_KEY is shorter than 32 characters (draw one with "
        "`python -c 'import secrets; print(secrets.token_hex(32))'`)"
    )
_checkpoint_file = env_str("SHERLOCK_AUDIT_CHECKPOINT_FILE")
SHERLOCK_AUDIT_CHECKPOINT_FILE = Path(_checkpoint_file).expanduser() if _checkpoint_file else None
if SHERLOCK_AUDIT_CHECKPOINT_FILE and not SHERLOCK_AUDIT_KEY:
    raise ImproperlyConfigured(
        "SHERLOCK_AUDIT_CHECKPOINT_FILE is set but SHERLOCK_AUDIT_KEY is not: a checkpoint "
        "needs the key to be signed"
    )
if SHERLOCK_AUDIT_CHECKPOINT_FILE and not SHERLOCK_AUDIT_CHECKPOINT_FILE.parent.is_dir():
    raise ImproperlyConfigured(
        f"SHERLOCK_AUDIT_CHECKPOINT_FILE={_checkpoint_file!r}: its directory does not exist"
    )
SHERLOCK_AUDIT_CHECKPOINT_MINUTES = env_int(
    "SHERLOCK_AUDIT_CHECKPOINT_MINUTES", 5, minimum=1, maximum=1440
)

# Signed release attestations (docs/attestations.md): each publication, rollback and retirement is
# an in-toto statement in a DSSE envelope, signed with the Ed25519 key read from
# SHERLOCK_ATTESTATION_KEY_FILE (a PEM file its owner alone may read) or SHERLOCK_ATTESTATION_KEY
# (the PEM itself). On when a key is configured, unless SHERLOCK_ATTESTATIONS=false; on without a
# key, or with a key file that is missing or readable by others, Sherlock refuses to start.
SHERLOCK_ATTESTATION_KEY = env_str("SHERLOCK_ATTESTATION_KEY")
_attestation_key_file = env_str("SHERLOCK_ATTESTATION_KEY_FILE")
SHERLOCK_ATTESTATION_KEY_FILE = (
    Path(_attestation_key_file).expanduser() if _attestation_key_file else None
)
SHERLOCK_ATTESTATIONS = env_bool(
    "SHERLOCK_ATTESTATIONS", bool(SHERLOCK_ATTESTATION_KEY or SHERLOCK_ATTESTATION_KEY_FILE)
)
if SHERLOCK_ATTESTATIONS and not (SHERLOCK_ATTESTATION_KEY or SHERLOCK_ATTESTATION_KEY_FILE):
    raise ImproperlyConfigured(
        "SHERLOCK_ATTESTATIONS is on but no signing key is configured: set "
        "SHERLOCK_ATTESTATION_KEY_FILE (`manage.py attestation_keys create` makes one)"
    )
if SHERLOCK_ATTESTATIONS and SHERLOCK_ATTESTATION_KEY_FILE and not SHERLOCK_ATTESTATION_KEY:
    if not SHERLOCK_ATTESTATION_KEY_FILE.is_file():
        raise ImproperlyConfigured(
            f"SHERLOCK_ATTESTATION_KEY_FILE={_attestation_key_file!r} does not exist "
            "(`manage.py attestation_keys create --file ...` makes one)"
        )
    if SHERLOCK_ATTESTATION_KEY_FILE.stat().st_mode & 0o077:
        raise ImproperlyConfigured(
            f"SHERLOCK_ATTESTATION_KEY_FILE={_attestation_key_file!r} is readable by others than "
            f"its owner: `chmod 600 {_attestation_key_file}`"
        )

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    # The hashed API keys' library (its abstract model, hasher and key generator; Sherlock's own
    # key model is governance.APIKey). Its admin screen is unregistered in
    # governance.admin.api_keys.
    "rest_framework_api_key",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "guardian",
    "django_q",
    "django_htmx",
    # Sign-in (the Sherlock sign-in page, password and OpenID Connect single sign-on): allauth's
    # account and socialaccount apps and its generic OIDC provider (docs/sso.md).
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.openid_connect",
    "agents",
    "evaluations",
    "governance",
    "production",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "sherlock.core.middleware.RequestContextMiddleware",
    "sherlock.core.middleware.RefuseNulMiddleware",
]

# Django's database sessions; a cookie holding a NUL is no session (sherlock.core.sessions).
SESSION_ENGINE = "sherlock.core.sessions"

ROOT_URLCONF = "sherlock.urls"
WSGI_APPLICATION = "sherlock.wsgi.application"
ASGI_APPLICATION = "sherlock.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "evaluations.views.context_processors.navigation",
            ],
            # The pickers' tags (sherlock.core.picker_tags), the kernel's: no app owns them.
            "libraries": {"pickers": "sherlock.core.picker_tags"},
        },
    },
]

# --- Database -------------------------------------------------------------------------------

DATABASE_URL = env_url(
    "DATABASE_URL",
    f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
    schemes=("sqlite", "postgres", "postgresql", "pgsql"),
)
try:
    _db = dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 0, 0))
except ValueError as exc:
    raise ImproperlyConfigured(f"DATABASE_URL is not usable: {exc}") from None

_test_db_name = env_str("SHERLOCK_TEST_DB_NAME")
if _db["ENGINE"] == "django.db.backends.sqlite3":
    # The web server and the django-q2 worker share one file: WAL lets readers and one writer
    # work at once, the busy timeout waits for a lock instead of failing, and IMMEDIATE
    # transactions take the write lock up front so two writers never deadlock on an upgrade.
    _db["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # A file (not :memory:) so that a real qcluster started by the tests sees the test data.
    _db["TEST"] = {"NAME": _test_db_name or str(BASE_DIR / "test-db.sqlite3")}
elif _test_db_name:
    # Separate test databases let two test sessions run side by side on one server.
    _db["TEST"] = {"NAME": _test_db_name}
DATABASES = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Background work: django-q2 ------------------------------------------------------------

REDIS_URL = env_url("REDIS_URL", "", schemes=("redis", "rediss", "unix"))
Q_TIMEOUT = env_int("SHERLOCK_TASK_TIMEOUT", 1800, minimum=10)
Q_RETRY = env_int("SHERLOCK_TASK_RETRY", Q_TIMEOUT + 300, minimum=11)
Q_CLUSTER = {
    "name": "sherlock",
    "workers": env_int("SHERLOCK_WORKERS", 2, minimum=1),
    # Every task is idempotent (it reloads rows and skips finished trials), and runs carry a
    # lease, so a task re-delivered after a crash is harmless. `retry` must stay longer than
    # `timeout`, or django-q2 hands a task that is still running to a second worker
    # (sherlock.checks refuses such a configuration at start-up).
    "timeout": Q_TIMEOUT,
    "retry": Q_RETRY,
    "max_attempts": 3,
    "ack_failures": True,
    "catch_up": False,
    "poll": 0.2,
    "sync": env_bool("SHERLOCK_Q_SYNC", False),
    "label": "Background tasks",
}
if REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
else:
    Q_CLUSTER["orm"] = "default"

# --- Sherlock -------------------------------------------------------------------------------

OPENAI_API_KEY = env_str("OPENAI_API_KEY")
SHERLOCK_JUDGE_BASE_URL = env_url("SHERLOCK_JUDGE_BASE_URL", "", schemes=("http", "https"))
SHERLOCK_JUDGE_MODEL = env_str("SHERLOCK_JUDGE_MODEL", "gpt-4o-mini")
SHERLOCK_JUDGE_TIMEOUT = env_int("SHERLOCK_JUDGE_TIMEOUT", 60, minimum=1)
SHERLOCK_JUDGE_MAX_RETRIES = env_int("SHERLOCK_JUDGE_MAX_RETRIES", 3, minimum=0, maximum=10)
SHERLOCK_JUDGE_MAX_BACKOFF = env_int("SHERLOCK_JUDGE_MAX_BACKOFF", 8, minimum=0)
SHERLOCK_JUDGE_SEED = env_int("SHERLOCK_JUDGE_SEED", 7)
# Every judge call is sent with a completion cap: this many tokens, or with 0 (the default) a cap
# sized from the question's bounded answer schema (evaluations/judge/schema.py,
# completion_budget; docs/checks.md "The judge").
SHERLOCK_JUDGE_MAX_TOKENS = env_int("SHERLOCK_JUDGE_MAX_TOKENS", 0, minimum=0)
# The parameter the cap is sent as: auto = max_completion_tokens on OpenAI and Azure OpenAI,
# max_tokens on any other server (what llama.cpp, vLLM, Ollama honour); see judge/sdk.py.
SHERLOCK_JUDGE_MAX_TOKENS_PARAM = env_choice(
    "SHERLOCK_JUDGE_MAX_TOKENS_PARAM", "auto", ("auto", "max_tokens", "max_completion_tokens")
)
# maxItems on every array of an answer schema; false for a server that refuses the keyword
# (one that answers 400 naming it is detected and asked again without, in any case).
SHERLOCK_JUDGE_SCHEMA_BOUNDS = env_bool("SHERLOCK_JUDGE_SCHEMA_BOUNDS", True)
# The judge runs on the team's own server and its calls cost nothing: SHERLOCK_JUDGE_MODEL
# without a ModelPrice row is priced at $0 (a row, when there is one, wins). Off by default: a
# hosted judge's calls without a price are "price missing", never $0 (docs/judges.md).
SHERLOCK_JUDGE_FREE = env_bool("SHERLOCK_JUDGE_FREE", False)
# The judge's keep-alive transport is gone (the OpenAI SDK's own client sends its requests): a
# leftover SHERLOCK_JUDGE_TRANSPORT is ignored, said once at start-up on stderr (logging's
# last-resort handler; runserver's reloaded child, RUN_MAIN, does not say it again).
if "SHERLOCK_JUDGE_TRANSPORT" in os.environ and os.environ.get("RUN_MAIN") != "true":
    logging.getLogger("sherlock.settings").warning(
        "SHERLOCK_JUDGE_TRANSPORT is set but ignored: the judge always uses the OpenAI SDK's "
        "own HTTP client."
    )
# Calls in flight per worker process (trials overlapping on its event loop), and the database
# connections per worker process that all its trials share (claims, evidence, the judge's
# stored cache), besides the shard's own and its writer's: size PostgreSQL's max_connections
# for worker processes x (SHERLOCK_DB_CONNECTIONS + 3) + the web processes (docs/scale-out.md).
SHERLOCK_RUN_CONCURRENCY = env_int("SHERLOCK_RUN_CONCURRENCY", 8, minimum=1, maximum=512)
SHERLOCK_DB_CONNECTIONS = env_int("SHERLOCK_DB_CONNECTIONS", 4, minimum=1, maximum=32)
SHERLOCK_SHARD_SIZE = env_int("SHERLOCK_SHARD_SIZE", 50, minimum=1)
# How often a shard of a run that stops early reads its gates (docs/contract.md, "Stopping
# early"): a few aggregate queries over the run's trials each time.
SHERLOCK_STOP_EARLY_SECONDS = env_int("SHERLOCK_STOP_EARLY_SECONDS", 2, minimum=1, maximum=600)
# A claimed trial's lease: its worker renews the leases it holds every third of this (one UPDATE
# per round), so a trial may run longer; a dead worker's leases run out at most this long after
# it died, and the reaper hands its trials back.
SHERLOCK_TRIAL_LEASE_SECONDS = env_int("SHERLOCK_TRIAL_LEASE_SECONDS", 600, minimum=5)
# A client run (docs/client.md) waits for its uploads this long after it was created; then the
# reaper finishes it: what was uploaded is scored, every item never returned is an agent error.
# Not a lease: nothing of Sherlock's holds a waiting run, so it is no sign of a dead worker.
SHERLOCK_CLIENT_RUN_TIMEOUT_HOURS = env_int(
    "SHERLOCK_CLIENT_RUN_TIMEOUT_HOURS", 24, minimum=1, maximum=24 * 90
)
# A client run's uploaded transcripts are scored as each batch is stored, while the client's
# calls go on (its verdict then waits only for the last batch's scoring); off, scoring starts
# when the client finishes the run.
SHERLOCK_CLIENT_SCORE_EARLY = env_bool("SHERLOCK_CLIENT_SCORE_EARLY", True)
# `GET /api/v1/runs/{id}/verdict/?wait=<s>` holds its answer at most this long while the run is
# unfinished (the client waits on the server's word, docs/api.md "Verdict"); each wait holds a
# web thread, so keep it under the proxy's and gunicorn's timeouts.
SHERLOCK_VERDICT_WAIT_MAX_SECONDS = env_int(
    "SHERLOCK_VERDICT_WAIT_MAX_SECONDS", 20, minimum=0, maximum=50
)

# Webhook deliveries (governance.webhooks, docs/governance.md "Webhooks"): each POST waits at most
# SHERLOCK_WEBHOOK_TIMEOUT seconds; a 5xx, 408, 425, 429 or transport error is retried up to
# SHERLOCK_WEBHOOK_MAX_ATTEMPTS attempts in all, waiting SHERLOCK_WEBHOOK_BACKOFF_MS doubled
# after each attempt, capped at SHERLOCK_WEBHOOK_MAX_BACKOFF_MS. A task makes one attempt: the
# next is a django-q2 ONCE schedule due after the wait (no worker sleeps through it), run by the
# cluster's scheduler on its next pass (about every 30 s), so a wait is that long at least.
SHERLOCK_WEBHOOK_TIMEOUT = env_int("SHERLOCK_WEBHOOK_TIMEOUT", 10, minimum=1, maximum=60)
SHERLOCK_WEBHOOK_MAX_ATTEMPTS = env_int("SHERLOCK_WEBHOOK_MAX_ATTEMPTS", 5, minimum=1, maximum=10)
SHERLOCK_WEBHOOK_BACKOFF_MS = env_int("SHERLOCK_WEBHOOK_BACKOFF_MS", 2000, minimum=0)
SHERLOCK_WEBHOOK_MAX_BACKOFF_MS = env_int("SHERLOCK_WEBHOOK_MAX_BACKOFF_MS", 30000, minimum=0)

# Production traces (production, docs/production.md): a trace whose root span has not come is
# decided SHERLOCK_TRACE_QUIET_SECONDS after its last span was received (complete when every
# span's parent came, else incomplete); the sweep runs every minute. Traces received more than
# SHERLOCK_TRACE_RETENTION_DAYS ago are deleted by a daily task (0 keeps them for ever); the
# audit log is never touched.
SHERLOCK_TRACE_QUIET_SECONDS = env_int("SHERLOCK_TRACE_QUIET_SECONDS", 30, minimum=1, maximum=86400)
SHERLOCK_TRACE_RETENTION_DAYS = env_int("SHERLOCK_TRACE_RETENTION_DAYS", 30, minimum=0)


def _window_hours(name, default):
    """Hours of each sliding window, comma-separated, each from 1 to 90 days' worth."""
    hours = []
    for item in env_list(name, default):
        if not item.isdigit() or not 1 <= int(item) <= 2160:
            raise ImproperlyConfigured(f"{name}: {item!r} is not a number of hours (1 to 2160)")
        hours.append(int(item))
    if not hours:
        raise ImproperlyConfigured(f"{name} names no window")
    return sorted(set(hours))


# The contract over production (docs/production-online.md): the live version's five measures
# over each of these sliding windows, in hours (24 h and 7 d by default).
SHERLOCK_PRODUCTION_WINDOWS_HOURS = _window_hours(
    "SHERLOCK_PRODUCTION_WINDOWS_HOURS", ["24", "168"]
)

# What user-written configs may send where (sherlock.core.egress, docs/adapters.md "Secrets and
# destinations"): agent versions (Builders), verifiers (Editors, Builders) and webhook endpoints
# (Admins) are written by users but run with the workers' environment and network position, so
# the environment variables they may name and the hosts they may reach are listed here, by the
# operator. Variables: empty lists by default, and Sherlock's own secrets (SECRET_KEY,
# DATABASE_URL, REDIS_URL, OPENAI_API_KEY, any SHERLOCK_*) are refused even when listed. Hosts:
# `*` admits public addresses only; loopback, link-local (the metadata address), private and
# reserved addresses need the host, address or network listed, and environment values go only
# to hosts listed explicitly, never through `*`.


def _verifier_databases(name):
    """`alias=URL,...`: databases SQL verifiers may read, added to DATABASES (give them a
    read-only role). `default` is refused: Sherlock's own database holds the API keys' hashes."""
    aliases = []
    for item in env_list(name):
        alias, sep, url = (part.strip() for part in item.partition("="))
        if not sep or not (alias.isascii() and alias.isidentifier()):
            raise ImproperlyConfigured(f"{name}: {item!r} is not alias=URL")
        if alias in DATABASES:
            raise ImproperlyConfigured(
                f"{name}: alias {alias!r} is taken ('default' is Sherlock's own database)"
            )
        if urlparse(url).scheme not in ("sqlite", "postgres", "postgresql", "pgsql"):
            raise ImproperlyConfigured(f"{name}: {alias}'s URL is not a sqlite/postgres URL")
        try:
            DATABASES[alias] = dj_database_url.parse(url)
        except ValueError as exc:
            raise ImproperlyConfigured(f"{name}: {alias}'s URL is not usable: {exc}") from None
        aliases.append(alias)
    return aliases


def _env_names(name):
    """Names of environment variables a config may send (`{"env": ...}`, `headers_env`)."""
    names = env_list(name)
    for variable in names:
        if error := egress.variable_name_error(variable):
            raise ImproperlyConfigured(f"{name}: {error}")
    return names


def _callables(name, default):
    """Dotted paths a config may name: `pkg.mod.fn` exactly, or `pkg.mod.` for all."""
    paths = env_list(name, default)
    for path in paths:
        if not all(part.isascii() and part.isidentifier() for part in path.rstrip(".").split(".")):
            raise ImproperlyConfigured(f"{name}: {path!r} is not a dotted path (or prefix.)")
    return paths


def _hosts(name, default=()):
    """Host rules: `crm.internal`, `.example.com` (and its subdomains), an IP (`10.0.0.5`,
    `[::1]`), a network (`10.0.0.0/8`), or `*` for any host whose addresses are public."""
    hosts = env_list(name, default)
    for host in hosts:
        if error := egress.host_entry_error(host):
            raise ImproperlyConfigured(f"{name}: {error}")
    return [host.lower() for host in hosts]


SHERLOCK_VERIFIER_DATABASES = _verifier_databases("SHERLOCK_VERIFIER_DATABASES")
SHERLOCK_VERIFIER_ENV = _env_names("SHERLOCK_VERIFIER_ENV")
SHERLOCK_VERIFIER_CALLABLES = _callables(
    "SHERLOCK_VERIFIER_CALLABLES",
    ["agents.demo.outcome_in_ledger", "agents.demo.effect_in_ledger"],
)
SHERLOCK_VERIFIER_HOSTS = _hosts("SHERLOCK_VERIFIER_HOSTS")
# Python callables an agent version may name (the `python` adapter, `openai_chat` tool
# executors): Builders write those configs, and the code runs in the workers. The default is
# the demo's two agents by name, not `agents.demo.` (which would admit its ledger writer).
SHERLOCK_AGENT_CALLABLES = _callables(
    "SHERLOCK_AGENT_CALLABLES", ["agents.demo.support_bot", "agents.demo.refund_agent"]
)
# Environment variables an `http` or `openai_chat` agent may send (headers, `api_key`), and the
# hosts agents and their HTTP tool executors may call.
SHERLOCK_AGENT_ENV = _env_names("SHERLOCK_AGENT_ENV")
SHERLOCK_AGENT_HOSTS = _hosts("SHERLOCK_AGENT_HOSTS", ["*"])
# The hosts webhook endpoints may point at (governance.webhooks).
SHERLOCK_WEBHOOK_HOSTS = _hosts("SHERLOCK_WEBHOOK_HOSTS", ["*"])
# The demo agents' destination system (agents.demo): the file their tools write and the demo's
# two ledger verifiers read.
SHERLOCK_DEMO_LEDGER = Path(
    env_str("SHERLOCK_DEMO_LEDGER") or BASE_DIR / ".run" / "demo-ledger.jsonl"
)

# --- Auth, API ------------------------------------------------------------------------------

AUTHENTICATION_BACKENDS = [
    # allauth's own: a deactivated account with the right password is told it is deactivated
    # (and whom to ask), not that its password is wrong; a deactivated account's open session
    # still ends (its `get_user` is ModelBackend's, which refuses an inactive user).
    "allauth.account.auth_backends.AuthenticationBackend",
    "django.contrib.auth.backends.ModelBackend",
    "guardian.backends.ObjectPermissionBackend",
]
ANONYMOUS_USER_NAME = None  # guardian: no anonymous user row

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
if env_bool("SHERLOCK_FAST_HASHER", False):
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# --- Sign-in and single sign-on (docs/sso.md) ---------------------------------------------------
# Accounts are created by Admins (People: an invitation, governance.actions.invite_user) or by a
# first sign-in through an OIDC provider; nobody signs themselves up. SSO accounts are linked by
# (provider, subject) only, never by e-mail: no e-mail authentication, no auto-connect, and no
# unique-e-mail rule that would stop an auto sign-up or merge two people.
SHERLOCK_PASSWORD_LOGIN = env_bool("SHERLOCK_PASSWORD_LOGIN", True)
# A single sign-on groups claim must be a list; set this for a provider that sends one group as
# a string (docs/sso.md). Off: a string is no groups, so a misconfigured claim grants nothing.
SHERLOCK_SSO_GROUP_STRING = env_bool("SHERLOCK_SSO_GROUP_STRING", False)


def _loopback(host):
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _oidc_apps(name):
    """`SHERLOCK_OIDC_PROVIDERS=keycloak,entra` and, for each id, `SHERLOCK_OIDC_<ID>_SERVER_URL`
    (the issuer; discovery reads `/.well-known/openid-configuration` under it),
    `_CLIENT_ID`, `_SECRET`, and optionally `_NAME` (the button) and `_SCOPE` (space-separated,
    default `openid profile email`). HTTPS is required, except on a loopback address."""
    apps = []
    for provider_id in env_list(name):
        if not (provider_id.isascii() and provider_id.replace("-", "").isalnum()):
            raise ImproperlyConfigured(f"{name}: {provider_id!r} is not an id (letters, digits, -)")
        prefix = f"SHERLOCK_OIDC_{provider_id.upper().replace('-', '_')}_"
        url = env_url(prefix + "SERVER_URL", "", schemes=("https", "http"))
        client_id = env_str(prefix + "CLIENT_ID")
        if not url or not client_id:
            raise ImproperlyConfigured(f"{prefix}SERVER_URL and {prefix}CLIENT_ID must be set")
        parsed = urlparse(url)
        if parsed.scheme != "https" and not _loopback(parsed.hostname or ""):
            raise ImproperlyConfigured(
                f"{prefix}SERVER_URL={url!r}: an OIDC provider must be reached over HTTPS "
                "(plain HTTP only on a loopback address, for tests)"
            )
        scope = env_str(prefix + "SCOPE", "openid profile email").split()
        if "openid" not in scope:
            raise ImproperlyConfigured(f"{prefix}SCOPE must include openid")
        apps.append(
            {
                "provider_id": provider_id,
                "name": env_str(prefix + "NAME", provider_id),
                "client_id": client_id,
                "secret": env_str(prefix + "SECRET"),
                "settings": {
                    "server_url": url,
                    "oauth_pkce_enabled": True,
                    "scope": scope,
                    "fetch_userinfo": True,
                },
            }
        )
    return apps


SHERLOCK_OIDC_APPS = _oidc_apps("SHERLOCK_OIDC_PROVIDERS")
# Behind a proxy that terminates TLS, the redirect URI sent to the provider must say https: trust
# the proxy's X-Forwarded-Proto (only when the proxy sets it and clients cannot reach Sherlock
# around it).
if env_bool("SHERLOCK_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
if not SHERLOCK_PASSWORD_LOGIN and not SHERLOCK_OIDC_APPS:
    raise ImproperlyConfigured(
        "SHERLOCK_PASSWORD_LOGIN=false needs an OIDC provider (SHERLOCK_OIDC_PROVIDERS): "
        "nobody could sign in"
    )
SOCIALACCOUNT_PROVIDERS = {
    "openid_connect": {"OAUTH_PKCE_ENABLED": True, "APPS": SHERLOCK_OIDC_APPS},
}
ACCOUNT_ADAPTER = "governance.sso.adapter.AccountAdapter"
SOCIALACCOUNT_ADAPTER = "governance.sso.adapter.SocialAccountAdapter"
ACCOUNT_LOGIN_METHODS = {"username"}
ACCOUNT_SIGNUP_FIELDS = ["username*", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = "none"
ACCOUNT_UNIQUE_EMAIL = False
ACCOUNT_LOGOUT_ON_GET = False
ACCOUNT_LOGIN_ON_PASSWORD_RESET = False
SOCIALACCOUNT_ONLY = not SHERLOCK_PASSWORD_LOGIN
SOCIALACCOUNT_AUTO_SIGNUP = True
SOCIALACCOUNT_EMAIL_AUTHENTICATION = False
SOCIALACCOUNT_EMAIL_AUTHENTICATION_AUTO_CONNECT = False
SOCIALACCOUNT_EMAIL_VERIFICATION = "none"
SOCIALACCOUNT_EMAIL_REQUIRED = False
SOCIALACCOUNT_QUERY_EMAIL = False
SOCIALACCOUNT_LOGIN_ON_GET = False
SOCIALACCOUNT_STORE_TOKENS = False
# An invitation link (People) stays valid this many hours, and once: setting the password
# changes what its token is made of (django.contrib.auth.tokens).
# When EMAIL_HOST is set, an invitation is also mailed (Django's SMTP settings: EMAIL_PORT,
# EMAIL_HOST_USER, EMAIL_HOST_PASSWORD, EMAIL_USE_TLS, DEFAULT_FROM_EMAIL); the Admin copies
# the link in any case.
EMAIL_HOST_CONFIGURED = bool(env_str("EMAIL_HOST"))
if EMAIL_HOST_CONFIGURED:
    EMAIL_HOST = env_str("EMAIL_HOST")
    EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1, maximum=65535)
    EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
    EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
    EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
    DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "sherlock@localhost")
SHERLOCK_INVITE_HOURS = env_int("SHERLOCK_INVITE_HOURS", 72, minimum=1, maximum=24 * 30)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Hashed, named, expiring keys sent as `Authorization: Token <key>` (the header callers
        # already used with DRF's plaintext tokens; governance.api.authentication).
        "governance.api.authentication.APIKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # django-filter's backend, for lists (a detail names its object: sherlock.core.api.filters).
    "DEFAULT_FILTER_BACKENDS": ["sherlock.core.api.filters.ListFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_THROTTLE_CLASSES": ["rest_framework.throttling.UserRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "user": env_str("SHERLOCK_API_RATE", "2000/min"),
        # OTLP export calls per key (production.api.otlp): an exporter fleet shares one key.
        "otlp": env_str("SHERLOCK_OTLP_RATE", "20000/min"),
    },
    "EXCEPTION_HANDLER": "sherlock.core.api.errors.exception_handler",
    # The API reads JSON only (the case import also takes a file upload): bounded in size and
    # nesting before it is parsed (sherlock.core.api.parsers.JSONParser).
    "DEFAULT_PARSER_CLASSES": ["sherlock.core.api.parsers.JSONParser"],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}
# The largest request body the API reads, JSON or a file upload: larger answers 413 before
# anything is parsed. Text fields have their own, smaller limits (sherlock/core/limits.py).
SHERLOCK_API_MAX_BODY_BYTES = env_int("SHERLOCK_API_MAX_BODY_BYTES", 10 * 1024 * 1024, minimum=1024)
# Django's own limit on a body read at once is the same (its default, 2.5 MiB, would answer
# first with a 413 that names the wrong limit).
DATA_UPLOAD_MAX_MEMORY_SIZE = SHERLOCK_API_MAX_BODY_BYTES
# One uploaded transcript's compact JSON (the client's items, docs/client.md "Limits"): a
# model's long answer with its tool calls and contexts fits. The client learns both limits
# from the run it starts and never sends a body over them.
SHERLOCK_UPLOAD_ITEM_MAX_BYTES = env_int(
    "SHERLOCK_UPLOAD_ITEM_MAX_BYTES", 1024 * 1024, minimum=1024
)

# A read authenticated by an API key relies on the user's roles as this process loaded them at
# most this many seconds ago (revocation, expiry and deactivation are re-read on every request;
# governance.api.authentication, docs/governance.md "API keys"); 0: load them on every request.
SHERLOCK_API_AUTH_CACHE_SECONDS = env_int(
    "SHERLOCK_API_AUTH_CACHE_SECONDS", 5, minimum=0, maximum=300
)

# API keys (docs/governance.md "API keys"): a key lives SHERLOCK_API_KEY_DAYS days unless its
# issuer asks for fewer or more, and never longer than SHERLOCK_API_KEY_MAX_DAYS.
SHERLOCK_API_KEY_MAX_DAYS = env_int("SHERLOCK_API_KEY_MAX_DAYS", 365, minimum=1, maximum=3650)
SHERLOCK_API_KEY_DAYS = env_int(
    "SHERLOCK_API_KEY_DAYS", min(90, SHERLOCK_API_KEY_MAX_DAYS), minimum=1
)
if SHERLOCK_API_KEY_DAYS > SHERLOCK_API_KEY_MAX_DAYS:
    raise ImproperlyConfigured(
        f"SHERLOCK_API_KEY_DAYS={SHERLOCK_API_KEY_DAYS} is above "
        f"SHERLOCK_API_KEY_MAX_DAYS={SHERLOCK_API_KEY_MAX_DAYS}"
    )

# A schedule whose estimate passes this many US dollars a month (30 days) is saved only with an
# explicit confirmation of the cost (`confirm_cost`, audited; docs/schedules.md): a `*/5` cron
# on a large dataset is thousands a month. 0 asks for every priced schedule.
SHERLOCK_SCHEDULE_CONFIRM_MONTHLY_USD = env_int(
    "SHERLOCK_SCHEDULE_CONFIRM_MONTHLY_USD", 100, minimum=0
)

SPECTACULAR_SETTINGS = {
    "TITLE": "Sherlock API",
    "DESCRIPTION": "Evaluate AI agents and govern their release.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Several models have a `state` or a `status` with choices of their own: name each enum.
    "ENUM_NAME_OVERRIDES": {
        "APIKeyStateEnum": "governance.choices.APIKeyState",
        "RunStatusEnum": "evaluations.choices.RunStatus",
        "TrialStatusEnum": "evaluations.choices.TrialStatus",
        "CheckStatusEnum": "evaluations.choices.CheckStatus",
        "RunPurposeEnum": "evaluations.choices.RunPurpose",
        # `POST /runs/client/`'s purpose (docs/client.md): `manual` is stored as `adhoc`.
        "ClientRunPurposeEnum": ["manual", "adhoc", "gate"],
        "CheckKindEnum": "evaluations.api.serializers.CHECK_KINDS",
        "TraceStateEnum": "production.choices.TraceState",
        # A rate decided on its point estimate or its interval: the case pass rate's and the
        # floors' (docs/contract.md, "Deciding on the interval").
        "RateDecisionEnum": "governance.choices.RateDecision",
    },
    # Every operation documents its error answers in the one error shape.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "sherlock.core.api.schema.document_errors",
        "sherlock.core.api.schema.document_integer_range",
    ],
}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Sherlock's own sign-in page (allauth's, in Sherlock's templates); the admin's login and logout
# URLs lead to the same pages (sherlock/urls.py), so there is one way in for every role.
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
# Signing out (the site's and the admin's Log out) lands on the sign-in page, with a message
# (governance.receivers.say_signed_out); signing in again leads back to the run list. A session
# signed in through single sign-on first ends the provider's session, when the provider
# publishes an end_session_endpoint (governance.sso.adapter).
LOGOUT_REDIRECT_URL = "/accounts/login/?next=/"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Long messages (a 404's 100,000-character path) are cut (sherlock.core.limits); a refusal
    # (403) is one line, without its traceback (sherlock.core.log).
    "filters": {
        "refusals": {"()": "sherlock.core.log.OneLineRefusals"},
        "clip": {"()": "sherlock.core.limits.ClipLogRecords"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["refusals", "clip"]}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "WARNING")},
    "loggers": {"sherlock": {"level": env_str("LOG_LEVEL", "INFO")}},
}
