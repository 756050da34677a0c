"""Verifiers are written by Editors and Builders but run with Sherlock's rights, so each reaches
only what the operator listed: a python verifier the SHERLOCK_VERIFIER_CALLABLES, a SQL verifier
the SHERLOCK_VERIFIER_DATABASES and never Sherlock's own database, an HTTP verifier the
SHERLOCK_VERIFIER_HOSTS, sending only the SHERLOCK_VERIFIER_ENV variables. A spec outside them is
refused on save (400 naming the field, nothing saved) and gives no verdict at run time."""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.verifiers.runners import run_verifier
from agents.verifiers.spec import InvalidVerifier, validate_verifier_spec
from evaluations.actions.create_case import CreateCase
from evaluations.actions.update_case import UpdateCase
from evaluations.engine.evidence import collect_evidence
from evaluations.models import Case, CaseVersion
from governance.models import AuditEntry
from sherlock.core.errors import ActionInvalid
from tests.support import factories
from tests.support.factories import api
from tests.support.governance import api_key
from tests.support.verifiers import LEDGER_DB, ledger_database, make_trial

pytestmark = pytest.mark.django_db

HERE = "tests.evaluations.test_verifier_security"


@pytest.fixture
def draft(db):
    return factories.dataset_version(cases=[("existing", "hello", {})], frozen=False)


def post_case(user, draft, outcome_check):
    body = {"dataset_version": draft.pk, "key": "refund", "input": "Refund $40"}
    return api(user).post("/api/v1/cases/", {**body, "outcome_check": outcome_check}, format="json")


def assert_refused_and_nothing_saved(response, field):
    assert response.status_code == 400, response.json()
    assert response.json()["field"] == field
    assert not Case.objects.filter(key="refund").exists()
    assert not AuditEntry.objects.filter(action="evaluations.case.create").exists()


def verified(context):
    return True


# --- SQL: Sherlock's own database is never readable ---------------------------------------------

STEAL_TOKEN = {
    "kind": "sql",
    "database": "default",
    "query": "SELECT hashed_key FROM governance_apikey",
    "predicate": {"path": "$.rows", "op": "exists"},
}


@pytest.mark.parametrize("allowed", [[], ["default"]])
def test_an_editors_case_reading_sherlocks_own_database_is_refused_on_save(
    editor, draft, settings, allowed
):
    settings.SHERLOCK_VERIFIER_DATABASES = allowed  # listing `default` does not open it

    response = post_case(editor, draft, STEAL_TOKEN)

    assert_refused_and_nothing_saved(response, "outcome_check.database")
    assert "Sherlock's own database" in response.json()["detail"]


def test_a_case_forced_into_the_database_reads_nothing_at_run_time(admin_user, settings):
    settings.SHERLOCK_VERIFIER_DATABASES = ["default"]
    key, _ = api_key(admin_user)
    trial = make_trial(STEAL_TOKEN)  # saved around the actions, as a raw save would be
    done = {"output": "Done.", "tool_calls": [], "declared_complete": True}

    with CaptureQueriesContext(connection) as queries:
        evidence = collect_evidence(trial, done)

    assert evidence["outcome_verdict"] == "unavailable"
    assert (
        "Sherlock's own database ('default') is never readable"
        in (evidence["outcome_evidence"]["reason"])
    )
    assert key.hashed_key not in json.dumps(evidence, default=str)
    assert not [q for q in queries if "governance_apikey" in q["sql"]]


def test_a_database_alias_the_operator_did_not_list_is_refused(settings):
    settings.SHERLOCK_VERIFIER_DATABASES = []
    with ledger_database():
        state, evidence = run_verifier({**STEAL_TOKEN, "database": LEDGER_DB}, {})

    assert state == "unavailable"
    assert "SHERLOCK_VERIFIER_DATABASES" in evidence["reason"]


def test_a_listed_database_is_read(editor, draft, settings):
    settings.SHERLOCK_VERIFIER_DATABASES = [LEDGER_DB]
    spec = {"kind": "sql", "database": LEDGER_DB, "query": "SELECT 1 AS one"}
    with ledger_database():
        response = post_case(editor, draft, spec)
        state, _ = run_verifier(spec, {})

    assert response.status_code == 201, response.json()
    assert state == "verified"


# --- Python: only the listed callables, checked before anything is imported ---------------------


def test_a_callable_outside_the_allowlist_is_refused_on_save(editor, draft, settings):
    settings.SHERLOCK_VERIFIER_CALLABLES = ["agents.demo.outcome_in_ledger"]

    response = post_case(editor, draft, {"kind": "python", "callable": "os.system"})

    assert_refused_and_nothing_saved(response, "outcome_check.callable")


def test_a_callable_outside_the_allowlist_is_never_imported_at_run_time(settings):
    settings.SHERLOCK_VERIFIER_CALLABLES = ["agents.demo."]
    sys.modules.pop("this", None)  # importing `this` prints the Zen of Python: a side effect

    state, evidence = run_verifier({"kind": "python", "callable": "this.s"}, {})

    assert state == "unavailable"
    assert "SHERLOCK_VERIFIER_CALLABLES" in evidence["reason"]
    assert "this" not in sys.modules


@pytest.mark.parametrize("entry", [f"{HERE}.verified", f"{HERE}."])
def test_an_allowlisted_callable_runs_by_exact_path_or_prefix(settings, entry):
    settings.SHERLOCK_VERIFIER_CALLABLES = [entry]

    assert run_verifier({"kind": "python", "callable": f"{HERE}.verified"}, {})[0] == "verified"


def test_the_default_allowlist_holds_the_demos_verifiers_and_nothing_else_of_its_module():
    validate_verifier_spec({"kind": "python", "callable": "agents.demo.outcome_in_ledger"})
    validate_verifier_spec({"kind": "python", "callable": "agents.demo.effect_in_ledger"})
    with pytest.raises(InvalidVerifier) as refused:
        validate_verifier_spec({"kind": "python", "callable": "agents.demo.write_ledger"})
    assert refused.value.field == "callable"


# --- HTTP: listed hosts, listed variables, and secrets only to hosts named --------------------


class Recorder(BaseHTTPRequestHandler):
    """A destination on loopback that records what it was sent; /moved redirects to /."""

    def do_GET(self):
        self.server.seen.append((self.path, self.headers.get("Authorization")))
        if self.path == "/moved":
            self.send_response(302)
            self.send_header("Location", "/")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"ok": true}')

    def log_message(self, *args):
        pass


@pytest.fixture
def recorder():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    server.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def http(server, path="/", **extra):
    url = f"http://127.0.0.1:{server.server_address[1]}{path}"
    return {"kind": "http", "url": url, "predicate": {"path": "$.ok", "op": "truthy"}, **extra}


SEND_TOKEN = {"headers_env": {"Authorization": "CRM_TOKEN"}}


@pytest.fixture
def crm_token(monkeypatch):
    monkeypatch.setenv("CRM_TOKEN", "Bearer crm-secret")
    monkeypatch.setenv("SECRET_KEY", "sherlock-signing-key")


def test_a_header_from_a_variable_not_listed_is_refused_on_save(
    editor, draft, settings, recorder, crm_token
):
    settings.SHERLOCK_VERIFIER_HOSTS = ["127.0.0.1"]
    settings.SHERLOCK_VERIFIER_ENV = ["CRM_TOKEN"]
    spec = http(recorder, headers_env={"Authorization": "SECRET_KEY"})

    response = post_case(editor, draft, spec)

    assert_refused_and_nothing_saved(response, "outcome_check.headers_env.Authorization")
    assert run_verifier(spec, {})[0] == "unavailable"
    assert recorder.seen == []


def test_a_listed_variable_is_sent_to_a_host_listed_by_name(settings, recorder, crm_token):
    settings.SHERLOCK_VERIFIER_HOSTS = ["127.0.0.1"]
    settings.SHERLOCK_VERIFIER_ENV = ["CRM_TOKEN"]

    state, _ = run_verifier(http(recorder, **SEND_TOKEN), {})

    assert state == "verified"
    assert recorder.seen == [("/", "Bearer crm-secret")]


def test_a_secret_never_goes_to_a_host_only_the_wildcard_allows(settings, crm_token):
    settings.SHERLOCK_VERIFIER_HOSTS = ["*"]
    settings.SHERLOCK_VERIFIER_ENV = ["CRM_TOKEN"]
    spec = {"kind": "http", "url": "https://crm.example.com/", "predicate": {"op": "exists"}}

    with pytest.raises(InvalidVerifier) as refused:
        validate_verifier_spec({**spec, **SEND_TOKEN})
    state, evidence = run_verifier({**spec, **SEND_TOKEN}, {})

    assert refused.value.field == "url" and "only allowed by '*'" in str(refused.value)
    assert state == "unavailable" and "only allowed by '*'" in evidence["reason"]
    validate_verifier_spec(spec)  # no secret: `*` is enough


def test_the_wildcard_never_admits_a_loopback_address(settings, recorder):
    settings.SHERLOCK_VERIFIER_HOSTS = ["*"]

    with pytest.raises(InvalidVerifier, match="loopback") as refused:
        validate_verifier_spec(http(recorder))
    state, evidence = run_verifier(http(recorder), {})

    assert refused.value.field == "url"
    assert state == "unavailable" and "loopback" in evidence["reason"]
    assert recorder.seen == []


def test_a_host_not_listed_is_never_called(editor, draft, settings, recorder):
    settings.SHERLOCK_VERIFIER_HOSTS = ["crm.internal"]

    response = post_case(editor, draft, http(recorder))

    assert_refused_and_nothing_saved(response, "outcome_check.url")
    assert run_verifier(http(recorder), {})[0] == "unavailable"
    assert recorder.seen == []


def test_a_redirect_is_not_followed(settings, recorder, crm_token):
    settings.SHERLOCK_VERIFIER_HOSTS = ["127.0.0.1"]
    settings.SHERLOCK_VERIFIER_ENV = ["CRM_TOKEN"]

    state, evidence = run_verifier(http(recorder, "/moved", **SEND_TOKEN), {}, "effect")

    assert state == "unknown"
    assert "redirects are not followed" in evidence["reason"]
    assert [path for path, _ in recorder.seen] == ["/moved"]


# --- The same validation on every write of a case ------------------------------------------------


def test_updating_a_case_validates_its_outcome_check_too(editor, draft):
    case_version = draft.case_versions.get()

    with pytest.raises(ActionInvalid) as refused:
        UpdateCase(
            acting_user=editor, case_version=case_version, outcome_check=STEAL_TOKEN
        ).execute()

    assert refused.value.field == "outcome_check.database"
    assert CaseVersion.objects.get(pk=case_version.pk).outcome_check == {}


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"kind": "ftp"}, "outcome_check.kind"),
        (
            {"kind": "http", "url": "http://[::1", "predicate": {"op": "exists"}},
            "outcome_check.url",
        ),
        (
            {"kind": "python", "callable": f"{HERE}.verified", "timeout_s": 0},
            "outcome_check.timeout_s",
        ),
        ({"kind": "sql", "database": LEDGER_DB, "query": "DELETE FROM x"}, "outcome_check.query"),
        (
            {"kind": "sql", "database": LEDGER_DB, "query": "SELECT 1", "predicate": {"op": "?"}},
            "outcome_check.predicate.op",
        ),
    ],
)
def test_a_malformed_outcome_check_names_its_field(editor, draft, settings, spec, field):
    settings.SHERLOCK_VERIFIER_CALLABLES = [f"{HERE}."]
    settings.SHERLOCK_VERIFIER_DATABASES = [LEDGER_DB]

    with ledger_database(), pytest.raises(ActionInvalid) as refused:
        CreateCase(
            acting_user=editor, dataset_version=draft, key="refund", outcome_check=spec
        ).execute()

    assert refused.value.field == field


def test_a_verifier_the_egress_rules_refuse_is_audited_among_other_errors(
    editor, draft, settings, recorder
):
    """A case refused on several fields at once is still audited when one of them is an
    egress refusal (`evaluations.case.refused`, code egress_refused); a case that is only
    malformed is not."""
    settings.SHERLOCK_VERIFIER_HOSTS = ["127.0.0.1"]
    spec = http(recorder, headers_env={"Authorization": "SECRET_KEY"})
    body = {"dataset_version": draft.pk, "key": "refund", "input": "hi", "tags": [1]}

    response = api(editor).post("/api/v1/cases/", {**body, "outcome_check": spec}, format="json")

    assert response.status_code == 400, response.json()
    assert len(response.json()["errors"]) == 2
    entry = AuditEntry.objects.get(action="evaluations.case.refused")
    assert entry.after == {"verb": "create", "code": "egress_refused"}
    assert entry.reason.startswith("outcome_check.headers_env.Authorization: SECRET_KEY")

    api(editor).post("/api/v1/cases/", {**body, "key": "other"}, format="json")
    assert AuditEntry.objects.filter(action="evaluations.case.refused").count() == 1
