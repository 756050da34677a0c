"""Running verifiers (agents.verifiers.runners): SQL and HTTP verifiers read the destination
with template values from their context; one that is refused, times out or cannot read it gives
`unavailable`/`unknown`, never a verdict; what is kept of the destination is a clip."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agents.verifiers.runners import MAX_OBSERVED_CHARS, run_verifier
from evaluations.models import Trial
from tests.support.verifiers import LEDGER_DB, ledger_database, make_trial

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _verifiers_allowed(settings, db):
    """The operator allows the loopback host and the ledger database (see
    tests/evaluations/test_verifier_security.py for what is refused)."""
    settings.SHERLOCK_VERIFIER_HOSTS = ["127.0.0.1"]
    settings.SHERLOCK_VERIFIER_DATABASES = [LEDGER_DB]
    with ledger_database():
        yield


# --- SQL verifiers ------------------------------------------------------------------------------


def sql(query, **extra):
    return {"kind": "sql", "database": LEDGER_DB, "query": query, **extra}


def test_a_sql_verifier_reads_the_destination_with_template_values():
    trial = make_trial()
    verifier = sql(
        "SELECT id, repetition FROM evaluations_trial WHERE id = %s",
        params=["{trial.id}"],
        predicate={"path": "$.rows[0].repetition", "op": "eq", "value": 1},
    )

    state, evidence = run_verifier(verifier, {"trial": {"id": trial.pk}})

    assert state == "verified"
    assert evidence["rows"] == 1


def test_a_sql_verifier_without_predicate_needs_a_row():
    state, _ = run_verifier(sql("SELECT id FROM evaluations_trial WHERE id = -1"), {})

    assert state == "failed"


@pytest.mark.parametrize(
    "query",
    [
        "DELETE FROM evaluations_trial",
        "SELECT 1; DELETE FROM evaluations_trial",
        "UPDATE evaluations_trial SET repetition = 2",
    ],
)
def test_a_sql_verifier_may_not_write(query):
    trial = make_trial()

    state, evidence = run_verifier(sql(query), {})

    assert state == "unavailable"
    assert "permission denied" in evidence["reason"]
    assert Trial.objects.filter(pk=trial.pk).exists()


def test_the_database_itself_refuses_a_write_that_starts_like_a_read():
    trial = make_trial()
    # "WITH ... DELETE" passes the statement check; the read-only session must refuse it.
    query = "WITH doomed AS (SELECT id FROM evaluations_trial) DELETE FROM evaluations_trial"

    state, evidence = run_verifier(sql(query), {})

    assert state == "unavailable"
    assert "the query failed" in evidence["reason"]
    assert Trial.objects.filter(pk=trial.pk).exists()
    # The session is writable again afterwards.
    Trial.objects.filter(pk=trial.pk).update(repetition=7)
    assert Trial.objects.get(pk=trial.pk).repetition == 7


def test_a_sql_verifier_on_an_unknown_alias_or_table_is_unavailable():
    assert run_verifier({**sql("SELECT 1"), "database": "billing"}, {})[0] == "unavailable"
    state, evidence = run_verifier(sql("SELECT * FROM no_such_table"), {})
    assert state == "unavailable"
    assert "the query failed" in evidence["reason"]


def test_a_missing_template_value_is_unavailable():
    state, evidence = run_verifier(sql("SELECT %s", params=["{call.arguments.order}"]), {})

    assert state == "unavailable"
    assert "{call.arguments.order} is missing" in evidence["reason"]


def test_an_effect_verifier_keyed_on_the_calls_receipt_finds_that_row_or_gives_no_verdict():
    """The call's own row, by the id the tool returned; a call that returned nothing cannot
    name its row: no verdict (it once became WHERE id = NULL, found nothing and failed)."""
    mine = make_trial()
    other = Trial.objects.create(
        run=mine.run, case=mine.case, case_version=mine.case_version, repetition=2
    )
    verifier = sql("SELECT id FROM evaluations_trial WHERE id = %s", params=["{call.result}"])

    def effect(result):
        return run_verifier(verifier, {"call": {"name": "x", "result": result}}, "effect")

    assert effect(mine.pk)[0] == effect(other.pk)[0] == "verified"
    assert effect(-1)[0] == "failed"
    state, evidence = effect(None)
    assert state == "unknown"
    assert "{call.result} is null" in evidence["reason"]


# --- HTTP verifiers -----------------------------------------------------------------------------


class Destination(BaseHTTPRequestHandler):
    """A CRM on loopback: /contacts/C-88 exists, /secret answers 403, /slow hangs."""

    def do_GET(self):
        if self.path == "/contacts/C-88":
            body, status = json.dumps({"address": {"city": "Paris"}, "version": 8}), 200
        elif self.path == "/secret":
            body, status = "{}", 403
        elif self.path == "/slow":
            time.sleep(1)
            body, status = "{}", 200
        elif self.path == "/html":
            body, status = "<html>", 200
        else:
            body, status = "{}", 404
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def destination():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Destination)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def http(url, **extra):
    return {"kind": "http", "url": url, **extra}


def test_an_http_verifier_tests_a_json_path_predicate(destination):
    verifier = http(
        destination + "/contacts/{call.arguments.contact}",
        predicate={"path": "$.address.city", "op": "eq", "value": "{call.arguments.city}"},
    )
    context = {"call": {"arguments": {"contact": "C-88", "city": "Paris"}}}

    assert run_verifier(verifier, context, "effect")[0] == "verified"
    context["call"]["arguments"]["city"] = "Lyon"
    state, evidence = run_verifier(verifier, context, "effect")
    assert (state, evidence["observed"]) == ("failed", "Paris")


def test_an_http_404_means_the_thing_is_absent(destination):
    verifier = http(destination + "/contacts/C-99", predicate={"path": "$.version", "op": "exists"})

    assert run_verifier(verifier, {})[0] == "failed"


@pytest.mark.parametrize(
    "path, extra, reason",
    [
        ("/secret", {}, "permission denied (403)"),
        ("/slow", {"timeout_s": 0.2}, "failed"),
        ("/html", {}, "not JSON"),
    ],
)
def test_an_http_verifier_that_cannot_read_the_destination_is_unknown_for_effects(
    destination, path, extra, reason
):
    verifier = http(destination + path, predicate={"path": "$", "op": "exists"}, **extra)

    state, evidence = run_verifier(verifier, {}, "effect")

    assert state == "unknown"
    assert reason in evidence["reason"]


def test_an_unreachable_destination_is_unavailable():
    verifier = http("http://127.0.0.1:9/nothing", predicate={"path": "$", "op": "exists"})

    assert run_verifier(verifier, {})[0] == "unavailable"


# --- What is kept of the destination ------------------------------------------------------------


def test_a_sql_verifier_keeps_only_a_clip_of_what_it_observed():
    note = "confidential " * 100
    verifier = sql("SELECT %s AS note", params=[note], predicate={"path": "$.rows", "op": "exists"})

    state, evidence = run_verifier(verifier, {})

    assert state == "verified"
    assert len(evidence["observed"]) == MAX_OBSERVED_CHARS + 1
    assert evidence["observed"].endswith("…")
    assert note not in json.dumps(evidence)


def test_a_short_observed_value_keeps_its_type():
    verifier = sql(
        "SELECT 40 AS amount", predicate={"path": "$.rows[0].amount", "op": "eq", "value": 40}
    )

    assert run_verifier(verifier, {})[1]["observed"] == 40
