"""Outcome and effect evidence (seed 003): verifiers read the destination, never the transcript;
a verifier that raises, times out or is refused gives `unavailable`/`unknown`, never a verdict."""

import json
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.db import DEFAULT_DB_ALIAS, connections
from django.utils import timezone

from agents.models import Tool
from evaluations.evidence import MAX_OBSERVED_CHARS, collect_evidence, run_verifier
from evaluations.models import Run, Trial
from tests.support import factories

pytestmark = pytest.mark.django_db

LEDGER = {"A-1001": 40}  # what the "destination" holds, read by the python verifiers below
LEDGER_DB = "ledger"  # the database alias the SQL verifiers below read


@contextmanager
def ledger_database():
    """Register the `ledger` alias for verifiers (Sherlock's own `default` is never readable).

    It stands in for a read-only replica of a destination by sharing the test database's
    connection: the test's own, uncommitted rows are visible to the verifier, and the
    read-only session is exercised on SQLite and PostgreSQL alike."""
    connections.settings[LEDGER_DB] = connections.settings[DEFAULT_DB_ALIAS]
    connections[LEDGER_DB] = connections[DEFAULT_DB_ALIAS]
    try:
        yield LEDGER_DB
    finally:
        del connections[LEDGER_DB]
        del connections.settings[LEDGER_DB]


@pytest.fixture(autouse=True)
def _verifiers_allowed(settings, db):
    """The operator allows what these tests name: this module's functions, the loopback host
    and the ledger database (see test_verifier_security.py for what is refused)."""
    settings.SHERLOCK_VERIFIER_CALLABLES = ["tests.evaluations.test_evidence."]
    settings.SHERLOCK_VERIFIER_HOSTS = ["127.0.0.1"]
    settings.SHERLOCK_VERIFIER_DATABASES = [LEDGER_DB]
    with ledger_database():
        yield


# --- Verifiers the cases name (importable by path) -------------------------------------------


def refund_in_ledger(context, order, amount):
    return {"verdict": "verified" if LEDGER.get(order) == amount else "failed", "evidence": LEDGER}


def raises(context):
    raise RuntimeError("ledger unreachable")


def sleeps(context):
    time.sleep(2)
    return True


def forbidden(context):
    raise PermissionError("credential rejected")


def says_unavailable(context):
    return ("unavailable", "collector offline")


def returns_nonsense(context):
    return 42


def refund_for_call(context):
    arguments = context["call"]["arguments"]
    return LEDGER.get(arguments["order"]) == arguments["amount"]


# --- Fixtures ---------------------------------------------------------------------------------


def make_trial(outcome_check=None, tools=(), denied=()):
    version = factories.dataset_version(
        cases=[("refund", "Refund $40 on A-1001", {"outcome_check": outcome_check or {}})]
    )
    agent_version = factories.agent_version()
    agent_version.tools.set(tools)
    agent_version.denied_tools.set(denied)
    run = Run.objects.create(agent_version=agent_version, dataset_version=version)
    case_version = version.case_versions.get()
    return Trial.objects.select_related("run__agent_version", "case_version__case").get(
        pk=Trial.objects.create(
            run=run,
            case=case_version.case,
            case_version=case_version,
            repetition=1,
            started_at=timezone.now(),
        ).pk
    )


def python(callable_name, **extra):
    return {
        "kind": "python",
        "callable": f"tests.evaluations.test_evidence.{callable_name}",
        **extra,
    }


DONE = {"output": "Refunded.", "tool_calls": [], "declared_complete": True}


# --- Outcome verifiers -------------------------------------------------------------------------


def test_a_python_outcome_verifier_that_finds_the_refund_verifies_it():
    trial = make_trial(python("refund_in_ledger", params={"order": "A-1001", "amount": 40}))

    evidence = collect_evidence(trial, DONE)

    assert evidence["declared_complete"] is True
    assert evidence["outcome_verdict"] == "verified"
    assert evidence["outcome_evidence"]["observed"] == {"A-1001": 40}
    assert "refund_in_ledger" in evidence["outcome_evidence"]["verifier"]


def test_a_declared_completion_whose_refund_is_absent_fails_its_outcome():
    trial = make_trial(python("refund_in_ledger", params={"order": "A-1001", "amount": 250}))

    assert collect_evidence(trial, DONE)["outcome_verdict"] == "failed"


@pytest.mark.parametrize(
    "verifier, reason",
    [
        (python("raises"), "RuntimeError: ledger unreachable"),
        (python("sleeps", timeout_s=0.2), "timed out after 0.2 s"),
        (python("forbidden"), "permission denied: credential rejected"),
        (python("says_unavailable"), "collector offline"),
        (python("returns_nonsense"), "returned int, not a verdict"),
        (python("no_such_function"), "cannot import"),
        ({"kind": "ftp"}, "a verifier needs a kind"),
    ],
)
def test_a_verifier_that_cannot_decide_gives_unavailable_never_a_verdict(verifier, reason):
    trial = make_trial(verifier)

    evidence = collect_evidence(trial, DONE)

    assert evidence["outcome_verdict"] == "unavailable"
    assert reason in evidence["outcome_evidence"]["reason"]


def test_a_case_without_an_outcome_verifier_leaves_the_completion_unverified():
    evidence = collect_evidence(make_trial(), DONE)

    assert evidence["outcome_verdict"] == "unavailable"
    assert evidence["outcome_evidence"]["reason"] == "the case names no outcome verifier"


def test_a_failed_agent_call_declares_nothing():
    evidence = collect_evidence(make_trial(python("refund_in_ledger")), None)

    assert evidence["declared_complete"] is None
    assert evidence["outcome_verdict"] == "unavailable"
    assert evidence["tool_effects"] == []


def test_collect_evidence_never_raises_and_fails_closed_on_every_tool_call():
    trial = make_trial()
    trial.run.agent_version = None  # a broken trial: reading its tool policy raises

    evidence = collect_evidence(
        trial, {"declared_complete": True, "tool_calls": [{"name": "kb.search"}]}
    )

    assert evidence["outcome_verdict"] == "unavailable"
    assert "evidence collection failed" in evidence["outcome_evidence"]["reason"]
    assert [e["state"] for e in evidence["tool_effects"]] == ["unknown"]
    assert evidence["effects_unknown"] == 1


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


# --- HTTP verifiers -----------------------------------------------------------------------------


class Destination(BaseHTTPRequestHandler):
    """A CRM on loopback: /contacts/C-88 exists, /secret answers 403, /slow hangs."""

    def do_GET(self):  # noqa: N802 -- the http.server API
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


# --- Tool effects -------------------------------------------------------------------------------


def tool(name, effectful=True, verifier=None, high_impact=False):
    return Tool.objects.create(
        name=name, effectful=effectful, verifier=verifier or {}, high_impact=high_impact
    )


def test_each_effectful_call_is_checked_at_the_destination_and_read_only_calls_are_not():
    tools = [
        tool("kb.search", effectful=False),
        tool("refunds.create", verifier=python("refund_for_call")),
        tool("tickets.reply"),  # effectful, but nobody said how to check it
    ]
    trial = make_trial(tools=tools)
    transcript = {
        "declared_complete": True,
        "tool_calls": [
            {"name": "kb.search", "arguments": {"query": "refund"}},
            {
                "id": "call_1",
                "name": "refunds.create",
                "arguments": {"order": "A-1001", "amount": 40},
            },
            {"name": "refunds.create", "arguments": '{"order": "A-1001", "amount": 99}'},
            {"function": {"name": "tickets.reply", "arguments": "{}"}},
            {"name": "shell.exec", "arguments": {}},
        ],
    }

    evidence = collect_evidence(trial, transcript)

    effects = [(e["call"], e["state"]) for e in evidence["tool_effects"]]
    assert effects == [
        ("refunds.create", "verified"),
        ("refunds.create", "failed"),
        ("tickets.reply", "unknown"),
        ("shell.exec", "unknown"),  # not registered: it may have written anywhere
    ]
    assert evidence["tool_effects"][0]["call_id"] == "call_1"
    assert (
        evidence["tool_effects"][3]["evidence"]["reason"] == "tool 'shell.exec' is not registered"
    )
    assert (evidence["effects_verified"], evidence["effects_failed"]) == (1, 1)
    assert evidence["effects_unknown"] == 2


def test_a_call_the_adapter_refused_is_intentionally_denied_not_failed():
    credit = tool("billing.apply_credit", verifier=python("raises"), high_impact=True)
    trial = make_trial(tools=[credit], denied=[credit])
    transcript = {
        "declared_complete": False,
        "tool_calls": [{"name": "billing.apply_credit", "arguments": {}, "denied": True}],
    }

    evidence = collect_evidence(trial, transcript)

    assert evidence["tool_effects"] == [
        {
            "call": "billing.apply_credit",
            "call_id": None,
            "state": "verified",
            "intentionally_denied": True,
            "evidence": {"reason": "refused by the version's tool policy"},
        }
    ]
    assert (evidence["effects_denied"], evidence["effects_failed"]) == (1, 0)


def test_a_denied_tool_that_ran_anyway_is_checked_and_flagged():
    credit = tool("billing.apply_credit", verifier=python("refund_for_call"), high_impact=True)
    trial = make_trial(tools=[credit], denied=[credit])
    transcript = {
        "tool_calls": [{"name": "billing.apply_credit", "arguments": {"order": "K", "amount": 1}}]
    }

    (effect,) = collect_evidence(trial, transcript)["tool_effects"]

    assert effect["intentionally_denied"] is False
    assert effect["state"] == "failed"
    assert effect["evidence"]["policy"] == "the tool is denied for this version but ran"


# --- Windows and waits ---------------------------------------------------------------------------

OWNED = {
    "owner": "billing-approver",
    "decision_requested": "approve $250 credit to K-2207",
    "deadline": "2026-03-02T17:00:00Z",
    "resumable": True,
}


def windows(active_with_delta, active_without, waiting, stale=0):
    return (
        [{"evidence_delta": "ledger row R-1 written"}] * active_with_delta
        + [{"evidence_delta": None}] * active_without
        + [{"waiting": True}] * waiting
        + [{"stale_collector": True}] * stale
    )


def test_windows_inside_an_owned_wait_are_excluded_from_useful_progress():
    transcript = {"declared_complete": False, "windows": windows(2, 0, 4, 1), "wait": OWNED}

    evidence = collect_evidence(make_trial(), transcript)

    assert evidence["progress"] == {
        "active_windows": 2,
        "windows_with_evidence_delta": 2,
        "excluded_wait_windows": 4,
        "stale_collector_windows": 1,
    }
    assert evidence["wait"] == {**OWNED, "decision": None}
    assert (evidence["active_windows"], evidence["excluded_wait_windows"]) == (2, 4)
    assert evidence["stalled_wait_windows"] == 0


@pytest.mark.parametrize("missing", ["owner", "decision_requested", "deadline", "resumable"])
def test_a_wait_that_does_not_name_everything_is_a_stall(missing):
    wait = {key: value for key, value in OWNED.items() if key != missing}
    transcript = {"windows": windows(1, 1, 3), "wait": wait}

    evidence = collect_evidence(make_trial(), transcript)

    assert (evidence["active_windows"], evidence["windows_with_evidence_delta"]) == (5, 1)
    assert (evidence["stalled_wait_windows"], evidence["excluded_wait_windows"]) == (3, 0)


# --- Malformed transcripts and large destinations ------------------------------------------------


def test_tool_calls_that_are_not_a_list_are_one_unknown_effect_not_one_per_character():
    trial = make_trial(tools=[tool("email.send", verifier=python("refund_for_call"))])

    evidence = collect_evidence(trial, {"declared_complete": True, "tool_calls": "email.send"})

    assert [(e["call"], e["state"]) for e in evidence["tool_effects"]] == [("?", "unknown")]
    assert evidence["tool_effects"][0]["evidence"]["reason"] == "tool_calls is a str, not a list"
    assert evidence["effects_unknown"] == 1


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
