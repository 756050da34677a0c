"""`seed_demo` shows both paths of the publish gate and tells the release-inversion story.

`support-bot` v1 passes the default publishing policy and is published by `publisher` with no
bypass; v2 is blocked, and paired with v1 on the same cases it regresses on the two refund cases.
`help-answerer` clears its 0.85 case pass rate by point estimate (27 of 30) but not by
interval, so its publication has insufficient evidence. The fast refund agent scores higher
and costs less per run, yet its contract fails at the false-success gate, because the ledger
has no trace of the credit it claimed; the stable one passes. Idempotent, and fast enough to
run on every start."""

import io
import json

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.models import Agent, AgentVersion, Tool
from evaluations.contract.runs import run_contract
from evaluations.models import Case, CaseVersion, Check, Dataset, DatasetVersion, Run, Trial
from governance.models import AuditEntry, Bypass, PublishingPolicy, PublishRequest
from governance.publishing.decision import decide, policy_thresholds

pytestmark = pytest.mark.django_db

MODELS = (
    Agent,
    AgentVersion,
    Tool,
    Dataset,
    DatasetVersion,
    Case,
    CaseVersion,
    Check,
    Run,
    Trial,
    PublishingPolicy,
    PublishRequest,
    Bypass,
)


@pytest.fixture
def ledger(settings, tmp_path):
    settings.SHERLOCK_DEMO_LEDGER = str(tmp_path / "ledger.jsonl")
    return tmp_path / "ledger.jsonl"


@pytest.fixture
def seeded(ledger):
    """The number of queries `seed_demo` made (its speed is structure: bulk writes, no query
    per trial; a wall clock would fail on a slow machine)."""
    with CaptureQueriesContext(connection) as queries:
        call_command("seed_demo", stdout=io.StringIO())
    return len(queries)


def refund_runs():
    runs = Run.objects.filter(agent_version__agent__slug="refund-agent").select_related(
        "agent_version__agent", "dataset_version__dataset"
    )
    stable = runs.get(agent_version__config__kwargs__style="stable")
    fast = runs.get(agent_version__config__kwargs__style="fast")
    return stable, fast


def policy():
    return PublishingPolicy.objects.get(agent__slug="refund-agent")


def test_seed_demo_is_fast(seeded):
    # 1,743 queries on 2026-12-02 for its runs' hundreds of trials: a query per trial or per
    # result would be thousands more.
    assert seeded < 2500


def test_running_it_twice_creates_no_duplicates(seeded, ledger):
    counts = {model.__name__: model.objects.count() for model in MODELS}
    lines = len(ledger.read_text().splitlines())

    call_command("seed_demo", stdout=io.StringIO())

    assert {model.__name__: model.objects.count() for model in MODELS} == counts
    assert len(ledger.read_text().splitlines()) == lines  # no run was executed again


def test_the_fast_versions_contract_fails_at_false_success(seeded):
    _, fast = refund_runs()

    result = run_contract(fast, policy_thresholds(policy()))

    assert result.first_failing_gate == "false_success"
    assert (result.false_success.num, result.false_success.den) == (1, 4)
    assert result.gate("budget").status == "fail"  # $0.63 per verified outcome > $0.60


def test_the_stable_versions_contract_passes(seeded):
    stable, _ = refund_runs()

    result = run_contract(stable, policy_thresholds(policy()))

    assert result.release == "pass", [g for g in result.gates if not g.passed]
    assert str(result.useful_progress) == "14/14"
    assert result.excluded_wait_windows == 4  # the owned approval wait is not a stall
    assert result.intentionally_denied == 1  # the refused credit: proof the boundary held
    assert decide([stable], policy())["release"] == "pass"


def test_the_fast_version_looks_better_on_quality_and_cost_per_run_only(seeded):
    stable, fast = refund_runs()
    limits = policy_thresholds(policy())
    s, f = run_contract(stable, limits), run_contract(fast, limits)

    assert f.quality_mean > s.quality_mean
    assert f.cost_per_run_usd < s.cost_per_run_usd
    assert f.cost_per_verified_outcome_usd > s.cost_per_verified_outcome_usd
    assert fast.summary["case_pass_rate"] == stable.summary["case_pass_rate"] == 1.0


def test_the_false_success_is_real_the_ledger_has_no_credit(seeded, ledger):
    _, fast = refund_runs()
    trial = fast.trials.get(case__key="credit-k2207")

    assert trial.declared_complete is True
    assert trial.transcript["output"] == "Applied a $250 goodwill credit to account K-2207."
    assert trial.outcome_verdict == "failed"
    assert trial.outcome_evidence["observed"]["looked_for"] == {
        "kind": "credit",
        "account": "K-2207",
        "amount": 250,
    }
    entries = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert not [e for e in entries if e["kind"] == "credit"]
    (denied,) = [e for e in trial.tool_effects if e["intentionally_denied"]]
    assert denied["call"] == "billing.apply_credit"


def test_the_fast_version_is_blocked_by_the_release_decision(seeded):
    _, fast = refund_runs()

    decision = decide([fast], policy())

    assert decision["release"] == "fail"
    assert decision["first_failing_gate"] == "false_success"


def test_the_support_bot_demo_still_runs(seeded):
    run = Run.objects.get(agent_version__agent__slug="support-bot", purpose="adhoc")

    assert run.status == "completed"
    assert (run.summary["cases"], run.trials.count()) == (12, 24)


def support_request(style):
    return PublishRequest.objects.select_related("agent_version__agent", "published_by").get(
        agent_version__agent__slug="support-bot", agent_version__config__kwargs__style=style
    )


def test_the_careful_support_bot_is_published_through_the_gate_without_a_bypass(seeded):
    request = support_request("careful")
    version = request.agent_version

    assert request.decision["release"] == "pass", request.decision["first_failing_gate"]
    assert request.policy.agent is None  # the default publishing policy
    assert request.state == "published" and request.published_by.username == "publisher"
    assert version.state == "published" and version.agent.live_version_id == version.pk
    assert not Bypass.objects.exists()
    (entry,) = AuditEntry.objects.filter(action="governance.version.publish")
    assert entry.actor.username == "publisher"
    assert request.requested_by.username == "builder"
    (run,) = request.runs.all()
    assert (run.purpose, run.status, run.repetitions) == ("gate", "completed", 2)
    # Every gate passed on evidence, not on a limit left unset.
    gates = {gate["name"]: gate["status"] for gate in request.decision["gates"]}
    assert gates == {
        "coverage": "pass",
        "false_success": "pass",
        "unknown_effects": "pass",
        "floors": "pass",
        "budget": "pass",
        "quality": "n/a",
        "checks_scored": "pass",
        "case_pass_rate": "pass",
        "regression": "n/a",  # nothing was live yet to pair it with
    }
    budget = next(g for g in request.decision["gates"] if g["name"] == "budget")
    assert budget["value"]["verified_outcomes"] == 24  # every trial's outcome is in the ledger


def test_the_fast_support_bot_is_blocked(seeded):
    request = support_request("fast")

    assert request.state == "blocked"
    assert request.decision["first_failing_gate"] == "case_pass_rate"
    assert request.agent_version.state == "draft"
    assert request.agent_version.agent.live_version.config["kwargs"]["style"] == "careful"


def test_the_fast_support_bot_regresses_against_live_on_the_refund_cases(seeded):
    request = support_request("fast")
    careful = support_request("careful")
    gate = {g["name"]: g for g in request.decision["gates"]}["regression"]
    assert [run["id"] for run in request.decision["live_runs"]] == [careful.runs.get().pk]
    assert gate["value"]["paired"]["only_live"] == 2
    assert [row["key"] for row in gate["value"]["discordant"]] == ["refund-json", "refund-small"]
    assert not any(row["candidate_passed"] for row in gate["value"]["discordant"])


def test_the_help_answerer_clears_its_rate_by_point_but_not_by_interval(seeded):
    request = PublishRequest.objects.get(agent_version__agent__slug="help-answerer")
    (run,) = request.runs.all()
    assert (run.summary["passed"], run.summary["cases"]) == (27, 30)
    assert request.policy.min_case_pass_rate == 0.85 <= run.summary["case_pass_rate"]
    assert request.state == "blocked"
    assert request.decision["verdict"]["outcome"] == "insufficient"
    gate = next(g for g in request.decision["gates"] if g["name"] == "case_pass_rate")
    low, high = gate["value"]["runs"][0]["interval"]
    assert low < 0.85 < high and gate["status"] == "insufficient"


def test_it_prints_only_where_to_look_and_the_logins(ledger):
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    lines = out.getvalue().splitlines()
    careful, fast = (support_request(style).agent_version for style in ("careful", "fast"))

    assert len(lines) <= 7, lines
    assert "/runs/" in lines[0]
    assert f"/governance/versions/{careful.pk}/" in out.getvalue()
    assert f"/governance/versions/{fast.pk}/  support-bot v2: blocked at case_pass_rate" in (
        out.getvalue()
    )
    assert "published by publisher (gate passed, no bypass)" in out.getvalue()
    assert "help-answerer v1: blocked: insufficient evidence at the case pass rate" in (
        out.getvalue()
    )
    assert "sherlock-<user>" in lines[-1]


def test_every_demo_dataset_has_an_owner_and_a_creation_entry(seeded):
    datasets = list(Dataset.objects.select_related("owner"))
    assert datasets and all(d.owner is not None for d in datasets)
    created = set(
        AuditEntry.objects.filter(action="evaluations.dataset.create").values_list(
            "target_id", flat=True
        )
    )
    assert created == {str(d.pk) for d in datasets}


def test_the_bots_gate_dataset_is_chosen_for_it_not_carried_by_the_global_policy(seeded):
    """The Default global policy names no gate dataset (no budget, verified
    outcomes not required: docs/contract.md); support-basics is chosen for support-bot, and the
    refund agent's own policy names refund-desk."""
    from governance.models import GateDataset, PublishingPolicy, gate_datasets_for

    default = PublishingPolicy.objects.get(agent__isnull=True)
    assert not default.gate_datasets.exists()
    assert not default.requires_verified_outcomes
    assert default.max_cost_per_verified_outcome_usd is None
    chosen = GateDataset.objects.select_related("agent", "dataset").get()
    assert (chosen.agent.slug, chosen.dataset.slug) == ("support-bot", "support-basics")
    refund = PublishingPolicy.objects.get(agent__slug="refund-agent")
    assert [d.slug for d in gate_datasets_for(refund.agent, refund)] == ["refund-desk"]
