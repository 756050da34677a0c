"""Numbers with bounds (docs/api.md, "Numbers"): every figure from outside is checked where
it enters, sums cannot overflow their columns, and no read of a stored figure raises.

Before the bounds, one trial billing $2,000,000 made every page that read it answer 500 on
SQLite, and on PostgreSQL the trial was retried into a 30-minute stall.
"""

from decimal import Decimal

import pytest
from django.db import connection
from django.db.models import F
from django.urls import reverse
from rest_framework.test import APIClient

from evaluations.choices import RunStatus, TrialStatus
from evaluations.costs.ledger import write_cost_lines
from evaluations.models import CostEntry, DailyCost, ModelPrice, Run, Trial
from sherlock.core.numbers import LATENCY_MS, TOKENS, USD
from tests.support import factories

SHAPE = {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}
AT_THE_BOUND = {
    "output": "ok",
    "cost_usd": int(USD.high),
    "usage": {"prompt_tokens": TOKENS.high, "completion_tokens": TOKENS.high},
    "latency_ms": LATENCY_MS.high,
}


def reporting_version(agent):
    return factories.agent_version(agent, callable_path="tests.support.agents_under_test.reporting")


def cases_answering(answers):
    return [(f"c{i}", {"answer": answer}, {}) for i, answer in enumerate(answers)]


def test_an_agent_billing_two_million_ends_its_own_trial_as_an_error(
    builder, django_capture_on_commit_callbacks
):
    agent = factories.agent()
    frozen = factories.dataset_version(
        cases=cases_answering([{"output": "fine"}, {"output": "rich", "cost_usd": 2_000_000}]),
        checks=[SHAPE],
    )
    run = factories.start_run(
        builder, reporting_version(agent), frozen, django_capture_on_commit_callbacks, reps=2
    )
    assert run.status == RunStatus.COMPLETED and run.trials_done == 4
    rich = Trial.objects.filter(run=run, case__key="c1")
    assert {trial.status for trial in rich} == {TrialStatus.ERROR}
    assert all("cost_usd: must be from 0 to 100,000 US dollars" in t.error for t in rich)
    fine = Trial.objects.filter(run=run, case__key="c0")
    assert {trial.status for trial in fine} == {TrialStatus.COMPLETED}


@pytest.mark.parametrize(
    "answer, field",
    [
        ({"output": "x", "usage": {"prompt_tokens": 2**31}}, "usage.prompt_tokens"),
        ({"output": "x", "usage": {"completion_tokens": -1}}, "usage.completion_tokens"),
        ({"output": "x", "latency_ms": 1e300}, "latency_ms"),
        ({"output": "x", "cost_usd": -0.01}, "cost_usd"),
        ({"output": "x", "cost_usd": "12"}, "cost_usd"),
    ],
)
def test_an_agent_reporting_a_figure_out_of_range_errs_with_its_range(
    builder, django_capture_on_commit_callbacks, answer, field
):
    agent = factories.agent()
    frozen = factories.dataset_version(cases=cases_answering([answer]), checks=[SHAPE])
    run = factories.start_run(
        builder, reporting_version(agent), frozen, django_capture_on_commit_callbacks
    )
    trial = Trial.objects.get(run=run)
    assert trial.status == TrialStatus.ERROR
    assert f"transcript.{field}: must be" in trial.error


def test_a_ten_thousand_trial_run_at_every_bound_sums_and_reads(
    admin_user, builder, client, password, django_capture_on_commit_callbacks
):
    """The maximum figure in every row of a 10,000-trial run: the run's spend, the day's
    total, the cost page, the lists, the API and the admin all read it. The engine runs 100
    trials at the bound (their sum already past any item column); 9,900 more rows like them
    go in through the ledger's own writer, as 99 more repetitions would."""
    agent = factories.agent()
    frozen = factories.dataset_version(cases=cases_answering([AT_THE_BOUND] * 100), checks=[SHAPE])
    run = factories.start_run(
        builder, reporting_version(agent), frozen, django_capture_on_commit_callbacks
    )
    assert run.status == RunStatus.COMPLETED and run.trials_done == 100
    assert run.trials_error == 0
    assert run.spend_usd == USD.high * 100  # $10,000,000: past the item column already
    more_repetitions(run, 100)
    run.refresh_from_db()
    assert Trial.objects.filter(run=run).count() == 10_000
    assert run.spend_usd == USD.high * 10_000  # $1,000,000,000
    day = DailyCost.objects.get(run=run, kind="agent")
    assert day.usd == USD.high * 10_000 and day.prompt_tokens == TOKENS.high * 10_000
    small = factories.start_run(
        builder, reporting_version(agent), frozen, django_capture_on_commit_callbacks
    )

    client.login(username=admin_user.username, password=password)
    pages = [
        reverse("evaluations:run-list"),
        reverse("evaluations:run-detail", args=[run.pk]),
        reverse("evaluations:trial-detail", args=[run.pk, "c0"]),
        f"{reverse('evaluations:compare')}?a={small.pk}&b={run.pk}",
        reverse("evaluations:costs"),
        reverse("admin:evaluations_run_changelist"),
        reverse("admin:evaluations_trial_changelist"),
        reverse("admin:evaluations_costentry_changelist"),
        reverse("admin:evaluations_run_change", args=[run.pk]),
    ]
    for page in pages:
        answer = client.get(page)
        assert answer.status_code == 200, page
    assert "$1,000,000,000.00" in client.get(reverse("evaluations:run-detail", args=[run.pk])).text

    api = APIClient()
    api.force_authenticate(admin_user)
    runs = api.get("/api/v1/runs/")
    assert runs.status_code == 200
    listed = next(row for row in runs.json()["results"] if row["id"] == run.pk)
    assert Decimal(listed["spend"]["usd_known"]) == Decimal(1_000_000_000)
    trials = api.get(f"/api/v1/trials/?run={run.pk}")
    assert trials.status_code == 200
    assert Decimal(trials.json()["results"][0]["cost_usd"]) == USD.high


def more_repetitions(run, repetitions):
    """Repetitions 2..`repetitions` of every trial of `run`, each like the first, with its cost
    line through `write_cost_lines` (the daily totals move as the engine moves them) and the
    run's counters moved as the engine's writer moves them."""
    firsts = list(Trial.objects.filter(run=run))
    lines = {line.trial_id: line for line in CostEntry.objects.filter(run=run)}
    trials, added = [], Decimal(0)
    for repetition in range(2, repetitions + 1):
        for first in firsts:
            trials.append(
                Trial(
                    run=run,
                    case=first.case,
                    case_version=first.case_version,
                    repetition=repetition,
                    status=first.status,
                    transcript=first.transcript,
                    latency_ms=first.latency_ms,
                    prompt_tokens=first.prompt_tokens,
                    completion_tokens=first.completion_tokens,
                    cost_usd=first.cost_usd,
                    billing_coverage=first.billing_coverage,
                    finished_at=first.finished_at,
                )
            )
            added += first.cost_usd
    Trial.objects.bulk_create(trials, batch_size=2000)
    new_lines = []
    for trial in trials:
        line = lines[next(f.pk for f in firsts if f.case_id == trial.case_id)]
        new_lines.append(
            CostEntry(
                kind=line.kind,
                day=line.day,
                model=line.model,
                prompt_tokens=line.prompt_tokens,
                completion_tokens=line.completion_tokens,
                usd=line.usd,
                agent_id=line.agent_id,
                run_id=run.pk,
                trial_id=trial.pk,
            )
        )
    write_cost_lines(new_lines)
    Run.objects.filter(pk=run.pk).update(
        trials_total=F("trials_total") + len(trials),
        trials_done=F("trials_done") + len(trials),
        repetitions=repetitions,
        spend_usd=F("spend_usd") + added,
    )


def test_a_cost_stored_before_the_bounds_is_shown_out_of_range_never_a_500(
    admin_user, builder, client, password, django_capture_on_commit_callbacks
):
    agent = factories.agent()
    frozen = factories.dataset_version(cases=cases_answering([{"output": "ok"}]), checks=[SHAPE])
    run = factories.start_run(
        builder, reporting_version(agent), frozen, django_capture_on_commit_callbacks
    )
    # What an older release let in: past the item bound on both databases and, on SQLite
    # (which stores what it is given), past the column too.
    legacy = Decimal(2_000_000) if connection.vendor == "sqlite" else Decimal(500_000)
    Trial.objects.filter(run=run).update(cost_usd=legacy)
    Run.objects.filter(pk=run.pk).update(spend_usd=legacy)
    CostEntry.objects.filter(run=run).update(usd=legacy)

    client.login(username=admin_user.username, password=password)
    trial_page = client.get(reverse("evaluations:trial-detail", args=[run.pk, "c0"]))
    assert trial_page.status_code == 200
    assert "(out of range)" in trial_page.text
    for page in (
        reverse("evaluations:run-list"),
        reverse("evaluations:run-detail", args=[run.pk]),
        reverse("evaluations:costs"),
        reverse("admin:evaluations_trial_changelist"),
        reverse("admin:evaluations_costentry_changelist"),
    ):
        assert client.get(page).status_code == 200, page
    api = APIClient()
    api.force_authenticate(admin_user)
    assert api.get("/api/v1/runs/").status_code == 200
    trials = api.get(f"/api/v1/trials/?run={run.pk}")
    assert trials.status_code == 200
    assert Decimal(trials.json()["results"][0]["cost_usd"]) == legacy


def test_a_price_past_its_range_is_refused_on_the_form(admin_user, client, password):
    client.login(username=admin_user.username, password=password)
    answer = client.post(
        reverse("admin:evaluations_modelprice_add"),
        {"model": "gpt-x", "usd_per_million_input": "5000", "usd_per_million_output": "1"},
    )
    assert answer.status_code == 200
    assert "less than or equal to 1000" in answer.text
    assert not ModelPrice.objects.exists()


# --- where else figures enter: a client's upload, an import, a judge, a tracer ---------------


def client_run(builder):
    from agents.models import AgentVersion
    from evaluations.actions.start_run import StartRun

    agent = factories.agent("bot")
    version = AgentVersion.objects.create(agent=agent, number=1, adapter="client", config={})
    frozen = factories.dataset_version(
        cases=[("a", "question a", {}), ("b", "question b", {})], checks=[SHAPE]
    )
    return StartRun(acting_user=builder, agent_version=version, dataset_version=frozen).execute()


@pytest.mark.parametrize(
    "transcript, field",
    [
        ({"output": "x", "cost_usd": 1_000_000}, "cost_usd"),
        ({"output": "x", "cost_usd": 1e308}, "cost_usd"),
        ({"output": "x", "usage": {"prompt_tokens": 2**63}}, "usage.prompt_tokens"),
        ({"output": "x", "usage": {"completion_tokens": 1.5}}, "usage.completion_tokens"),
        ({"output": "x", "latency_ms": 86_400_001}, "latency_ms"),
    ],
)
def test_a_client_upload_past_a_range_is_refused_naming_the_field(builder, transcript, field):
    api = factories.api(builder)
    run = client_run(builder)
    work = api.get(f"/api/v1/runs/{run.pk}/work/").json()["results"]
    items = [{"key": item["key"], "transcript": {"output": "ok"}} for item in work]
    items[1]["transcript"] = transcript
    answer = api.post(f"/api/v1/runs/{run.pk}/transcripts/", {"items": items}, format="json")
    assert answer.status_code == 400
    assert answer.json()["field"] == f"items[1].transcript.{field}"
    assert "must be" in answer.json()["detail"]
    assert not Trial.objects.filter(run=run, uploaded_at__isnull=False).exists()


def test_an_upload_at_the_bounds_is_accepted(builder):
    api = factories.api(builder)
    run = client_run(builder)
    work = api.get(f"/api/v1/runs/{run.pk}/work/").json()["results"]
    items = [{"key": item["key"], "transcript": AT_THE_BOUND} for item in work]
    answer = api.post(f"/api/v1/runs/{run.pk}/transcripts/", {"items": items}, format="json")
    assert answer.status_code == 200, answer.json()


def test_an_imported_trial_past_a_range_is_refused_naming_its_line(builder):
    import json

    from evaluations.actions.import_trials import ImportTrials
    from sherlock.core.errors import ActionInvalid

    agent = factories.agent()
    version = factories.agent_version(agent)
    record = {
        "trial_id": "t1",
        "variant": "candidate",
        "task": "refund",
        "declared_complete": True,
        "outcome": {"verdict": "verified"},
        "quality": None,
        "progress": {"active_windows": 1, "windows_with_evidence_delta": 1},
        "tool_effects": [],
        "cost": {"usd": 250_000, "billing_coverage": "billed"},
    }
    good = {**record, "trial_id": "t0", "cost": {"usd": 0.5, "billing_coverage": "billed"}}
    text = "\n".join(json.dumps(row) for row in (good, record))
    with pytest.raises(ActionInvalid) as refused:
        ImportTrials(acting_user=builder, agent_version=version, text=text).execute()
    assert "line 2" in str(refused.value) and "'cost.usd' must be from 0 to 100,000" in str(
        refused.value
    )
    assert not Run.objects.exists()


def test_a_judge_reporting_absurd_usage_is_an_error_not_a_price(llm_server):
    from tests.support.judging import GOOD, RELEVANCE, VARIABLES, fast_judge
    from tests.support.llm_server import Reply

    llm_server.script([Reply(content=GOOD, usage=(2**40, 5))])
    answer = fast_judge(llm_server).ask(RELEVANCE, VARIABLES)
    assert not answer.ok
    assert "usage.prompt_tokens: must be from 0 to 50,000,000 tokens" in answer.error
    assert [call.prompt_tokens for call in answer.calls] == [0]
    assert len(llm_server.requests) == 1  # a broken usage is not asked again


def test_a_trace_summing_past_a_range_keeps_the_trace_and_names_the_figure(client, builder):
    from production.models import Trace
    from production.traces.closing import complete_traces
    from tests.support.governance import api_key
    from tests.support.otel_clients import export_body, finished_spans

    agent = factories.agent("support-bot")
    factories.agent_version(agent, number=1)

    def two_big_calls(tracer):
        with tracer.start_as_current_span("invoke_agent"):
            for _ in range(2):
                with tracer.start_as_current_span("chat m") as span:
                    span.set_attribute("gen_ai.operation.name", "chat")
                    span.set_attribute("gen_ai.usage.input_tokens", 40_000_000)
                    span.set_attribute("gen_ai.usage.output_tokens", 10)

    resource = {"sherlock.agent": "support-bot", "sherlock.agent.version": 1}
    body = export_body(finished_spans(resource, two_big_calls))
    answer = client.post(
        "/api/v1/v1/traces",
        data=body,
        content_type="application/x-protobuf",
        HTTP_AUTHORIZATION=f"Token {api_key(builder)[1]}",
    )
    assert answer.status_code == 200
    complete_traces()
    trace = Trace.objects.get()
    assert trace.state == "complete"
    assert trace.input_tokens is None and trace.output_tokens is None
    assert "usage" not in trace.transcript
    assert trace.transcript["invalid"] == [
        "transcript.usage.prompt_tokens: must be from 0 to 50,000,000 tokens (got 80,000,000)"
    ]
    client.force_login(builder)
    page = client.get(f"/production/traces/{trace.pk}/").content.decode()
    assert 'id="invalid-figures"' in page and "(got 80,000,000)" in page


def test_a_trial_the_database_refuses_ends_as_an_error_at_once(
    builder, django_capture_on_commit_callbacks
):
    """A deterministic storage error (a value past its column) is not retried into leases:
    the writer stores the trial as an error with the database's reason."""
    from evaluations.engine.writer import write_batch
    from tests.support.factories import planned_run

    agent = factories.agent()
    frozen = factories.dataset_version(cases=cases_answering([{"output": "ok"}]), checks=[SHAPE])
    run = planned_run(builder, reporting_version(agent), frozen)
    trial = Trial.objects.get(run=run)
    Trial.objects.filter(pk=trial.pk).update(status=TrialStatus.RUNNING, attempts=1)
    from evaluations.engine.trials import Finished

    finished = Finished(
        trial=trial,
        attempt=1,
        fields={"status": TrialStatus.COMPLETED, "prompt_tokens": 2**63 + 1},
        results=[],
        judge_calls=[],
        costs=[],
        counters={"trials_done": 1, "trials_error": 0, "spend_usd": Decimal(1)},
    )
    assert write_batch([finished]) == 1
    trial.refresh_from_db()
    assert trial.status == TrialStatus.ERROR and trial.lease_expires_at is None
    assert trial.error.startswith("the trial's results could not be stored:")
    run.refresh_from_db()
    assert run.trials_done == 1 and run.trials_error == 1 and run.spend_usd == 0


def test_an_infinite_latency_stored_before_the_bounds_becomes_unknown(
    admin_user, builder, django_capture_on_commit_callbacks
):
    """`{"latency_ms": 1e400}` parsed as infinity, which no JSON answer can carry: the trials
    API answered 500 for its run. The migration makes it unknown."""
    import importlib

    from django.apps import apps

    agent = factories.agent()
    frozen = factories.dataset_version(cases=cases_answering([{"output": "ok"}]), checks=[SHAPE])
    run = factories.start_run(
        builder, reporting_version(agent), frozen, django_capture_on_commit_callbacks
    )
    Trial.objects.filter(run=run).update(latency_ms=float("inf"))
    migration = importlib.import_module("evaluations.migrations.0015_no_infinite_latencies")
    migration.forget_infinities(apps, None)
    assert Trial.objects.get(run=run).latency_ms is None
    api = APIClient()
    api.force_authenticate(admin_user)
    assert api.get(f"/api/v1/trials/?run={run.pk}").status_code == 200


def test_a_replayed_transcript_past_a_range_errs_like_any_answer(builder):
    """A `replay` version's recording is checked as an agent's answer is (its `call` skips the
    shared path that measures latency)."""
    from agents.adapters import AgentCallError
    from agents.adapters.replay import ReplayAgent
    from agents.models import AgentVersion

    agent = factories.agent()
    version = AgentVersion.objects.create(
        agent=agent,
        number=1,
        adapter="replay",
        config={"transcripts": {"c0": {"output": "ok", "cost_usd": 2_000_000}}},
    )
    with pytest.raises(AgentCallError, match="cost_usd: must be from 0 to 100,000"):
        ReplayAgent(version).call({"id": "c0"})
