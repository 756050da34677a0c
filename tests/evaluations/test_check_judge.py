"""`manage.py check_judge` against a working, a slow and a broken judge on the loopback server,
and the status it leaves: stored, shown by the admin, and carried by a run's estimate (with a
warning naming the blocking model checks of a failed family) and the API's answer."""

import json
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from evaluations.checks import rubrics
from evaluations.judge.probe import judge_status
from evaluations.judge.setup import NO_JUDGE
from evaluations.models import JudgeCall, JudgeProbe, ModelPrice
from tests.support import factories
from tests.support.governance import api_client
from tests.support.judge_fixtures import JUDGE_MODEL
from tests.support.llm_server import Reply, malformed, server_error

pytestmark = pytest.mark.django_db

CHECKS = [
    {"label": "Faithful", "kind": "faithfulness", "params": {"contexts": "reference"}},
    {"label": "Polite", "kind": "custom", "params": {"criterion": "It is polite."}},
    {"label": "Safe", "kind": "safety", "mode": "informative"},
    {"label": "Shape", "kind": "output_type", "params": {"type": "text"}},
]


def check_judge(*args):
    """(exit status, stdout) of `manage.py check_judge`."""
    out = StringIO()
    try:
        call_command("check_judge", *args, stdout=out)
    except CommandError as exc:
        return exc.returncode, out.getvalue()
    return 0, out.getvalue()


def start_run(builder, capture):
    version = factories.agent_version(callable_path="tests.support.agents_under_test.echo")
    dataset_version = factories.dataset_version(
        cases=[("paris", "Where is Paris?", {"contexts": ["Paris is in France."]})],
        checks=CHECKS,
    )
    client = api_client(builder)
    body = {"agent_version": version.pk, "dataset_version": dataset_version.pk}
    with capture(execute=False):
        response = client.post("/api/v1/runs/", body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


# --- a working judge -----------------------------------------------------------------------


def test_a_working_judge_answers_every_family_and_exits_0(judge_settings, llm_server):
    ModelPrice.objects.create(
        model=JUDGE_MODEL, usd_per_million_input=Decimal(0), usd_per_million_output=Decimal(0)
    )

    status, out = check_judge()

    assert status == 0, out
    for family in rubrics.FAMILIES:
        assert f"  {family} " in out
    assert "FAILED" not in out
    assert "price: $0.00/M in" in out
    assert len(llm_server.requests) == len(rubrics.FAMILIES)  # one question per family
    assert all("max_tokens" in request for request in llm_server.requests)
    probe = JudgeProbe.objects.get()
    assert probe.ok and probe.priced
    assert (probe.base_url, probe.model) == (llm_server.url, JUDGE_MODEL)
    assert set(probe.families) == set(rubrics.FAMILIES)
    rag = probe.families["rag"]
    assert rag["ok"] and rag["latency_ms"] > 0 and rag["prompt_tokens"] > 0
    (claims,) = [
        r
        for r in llm_server.requests
        if r["response_format"]["json_schema"]["name"] == "rag_claims"
    ]
    assert rag["max_tokens"] == claims["max_tokens"]
    assert JudgeCall.objects.filter(cached=False).count() == len(rubrics.FAMILIES)  # recorded


def test_the_probe_asks_past_the_cache(judge_settings, llm_server):
    check_judge("--family", "rag")
    check_judge("--family", "rag")

    assert len(llm_server.requests) == 2


def test_json_output_and_a_missing_price(judge_settings, llm_server):
    status, out = check_judge("--json", "--family", "custom")

    report = json.loads(out)
    assert status == 0
    assert report["ok"] and not report["priced"]
    assert report["model"] == JUDGE_MODEL
    (family,) = report["families"]
    assert family["family"] == "custom" and family["ok"]
    assert family["completion_tokens"] > 0


def test_without_a_judge_it_exits_2(settings):
    settings.SHERLOCK_JUDGE_BASE_URL = ""

    status, _ = check_judge()

    assert status == 2
    assert not JudgeProbe.objects.exists()


# --- a slow judge --------------------------------------------------------------------------


def test_a_slow_judge_times_out_and_is_told_to_raise_the_timeout(judge_settings, llm_server):
    llm_server.latency = 1.5  # over the 1 s timeout of judge_settings

    status, out = check_judge("--family", "heuristic")

    assert status == 1
    assert "FAILED (timeout)" in out
    assert "no answer within 1 s" in out
    assert "raise SHERLOCK_JUDGE_TIMEOUT" in out
    assert len(llm_server.requests) == 1  # asked once: --max-retries 0
    probe = JudgeProbe.objects.get()
    assert not probe.ok and probe.failed_families == ["heuristic"]


# --- a broken judge ------------------------------------------------------------------------


def test_a_judge_answering_malformed_json_fails_with_advice(judge_settings, llm_server):
    llm_server.responder = lambda request: malformed("Sure! Here is my grading.")

    status, out = check_judge("--family", "rag", "--family", "data")

    assert status == 1
    assert out.count("FAILED (malformed)") == 2
    assert "structured outputs" in out
    assert len(llm_server.requests) == 4  # each question and its one repair


def test_a_judge_failing_with_500_fails_with_advice(judge_settings, llm_server):
    llm_server.responder = lambda request: server_error(500)

    status, out = check_judge("--family", "custom")

    assert status == 1
    assert "FAILED (server_error)" in out and "see its log" in out


def test_a_cut_off_answer_says_to_raise_the_cap_or_the_context(judge_settings, llm_server):
    llm_server.responder = lambda request: Reply(content='{"claims": [', finish_reason="length")

    status, out = check_judge("--family", "rag")

    assert status == 1
    assert "FAILED (cut_off)" in out
    assert "raise SHERLOCK_JUDGE_MAX_TOKENS" in out and "context size" in out


def test_a_closed_port_is_named_a_refused_connection(judge_settings):
    judge_settings.SHERLOCK_JUDGE_BASE_URL = "http://127.0.0.1:9/v1"

    status, out = check_judge("--family", "custom")

    assert status == 1
    assert "FAILED (connection_refused)" in out and "no answer within" not in out
    assert "nothing listens at http://127.0.0.1:9/v1" in out
    assert "check the port in SHERLOCK_JUDGE_BASE_URL" in out


def test_an_unknown_host_is_named_and_not_asked_again(judge_settings):
    # `.invalid` never resolves (RFC 2606): the resolver answers at once, offline or not.
    judge_settings.SHERLOCK_JUDGE_BASE_URL = "http://judge.invalid/v1"

    status, out = check_judge("--family", "custom")

    assert status == 1
    assert "FAILED (name_not_found)" in out
    assert "the host of http://judge.invalid/v1 is not known" in out


# --- the status it leaves --------------------------------------------------------------------


def test_a_failed_probe_warns_the_run_estimate_and_the_api_answer(
    builder, judge_settings, llm_server, django_capture_on_commit_callbacks
):
    llm_server.responder = lambda request: malformed()
    check_judge("--family", "rag")

    run = start_run(builder, django_capture_on_commit_callbacks)

    (warning,) = run["warnings"]
    assert warning.startswith("blocking model checks may not be scored: Faithful (")
    assert "failed for rag" in warning and "structured outputs" in warning
    assert "Polite" not in warning and "Safe" not in warning  # custom not failed; informative
    assert run["estimate"]["warnings"] == run["warnings"]
    assert run["estimate"]["judge"]["failed_families"] == ["rag"]


def test_without_a_judge_the_estimate_names_the_blocking_model_checks(
    builder, settings, django_capture_on_commit_callbacks
):
    settings.SHERLOCK_JUDGE_BASE_URL = ""

    run = start_run(builder, django_capture_on_commit_callbacks)

    assert run["warnings"] == [
        f"Blocking model checks cannot be scored: Faithful, Polite. {NO_JUDGE}"
    ]


def test_a_good_probe_gives_no_warning(
    builder, judge_settings, llm_server, django_capture_on_commit_callbacks
):
    check_judge()

    run = start_run(builder, django_capture_on_commit_callbacks)

    assert run["warnings"] == []
    assert run["estimate"]["judge"]["ok"] is True


def test_a_probe_of_another_server_says_nothing_about_this_one(judge_settings, llm_server):
    llm_server.responder = lambda request: malformed()
    check_judge("--family", "rag")
    judge_settings.SHERLOCK_JUDGE_BASE_URL = "http://elsewhere:8080/v1"

    status = judge_status()

    assert status["ok"] is None and status["failed_families"] == []
    assert "not probed yet (manage.py check_judge)" in status["summary"]


def test_the_admin_shows_the_same_status(
    admin_user,
    password,
    client,
    builder,
    judge_settings,
    llm_server,
    django_capture_on_commit_callbacks,
):
    llm_server.responder = lambda request: server_error(500)
    check_judge("--family", "custom")
    summary = judge_status()["summary"]
    assert "custom failed" in summary and "no ModelPrice" in summary
    run = factories.start_run(
        builder,
        factories.agent_version(callable_path="tests.support.agents_under_test.echo"),
        factories.dataset_version(cases=[("a", "hi", {})], checks=CHECKS[1:2]),
        django_capture_on_commit_callbacks,
        execute=False,
    )
    client.login(username=admin_user.username, password=password)

    probes = client.get("/admin/evaluations/judgeprobe/").content.decode()
    page = client.get(f"/admin/evaluations/run/{run.pk}/change/").content.decode()
    probe = JudgeProbe.objects.get()
    detail = client.get(f"/admin/evaluations/judgeprobe/{probe.pk}/change/").content.decode()

    assert "Judge status: " in probes and "custom failed" in probes
    assert "Judge now" in page and "custom failed" in page
    assert "Warning: blocking model checks may not be scored: Polite" in page
    assert "server_error" in detail and "see its log" in detail


def test_the_status_never_shows_credentials_in_the_base_url(settings):
    settings.SHERLOCK_JUDGE_BASE_URL = "https://bob:s3cret@judge.internal:8443/v1"

    status = judge_status()

    assert "s3cret" not in str(status)
    assert "judge.internal:8443/v1: not probed yet" in status["summary"]


def test_every_model_kind_has_a_probed_family():
    from evaluations.checks import REGISTRY

    model_kinds = {kind for kind, cls in REGISTRY.items() if cls.uses_model}
    assert set(rubrics.KIND_FAMILIES) == model_kinds
    assert set(rubrics.KIND_FAMILIES.values()) == set(rubrics.FAMILIES) == set(rubrics.PROBES)
    assert all(rubric.family == family for family, (rubric, _) in rubrics.PROBES.items())
