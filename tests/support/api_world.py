"""A small dataset of every object kind the API serves, for the tests that call every
endpoint (tests/test_api_errors.py, tests/test_api_schema.py)."""

from agents.models import Tool
from evaluations.actions.create_schedule import CreateSchedule
from evaluations.choices import CheckStatus, RunStatus
from evaluations.models import CheckResult, DatasetVersion, Run, Trial
from governance.actions.request_bypass import RequestBypass
from governance.actions.request_publication import RequestPublication
from governance.models import AuditEntry, GateDataset, PublishingPolicy
from tests.support import factories
from tests.support.governance import (
    REASON,
    TOOLS_CHECK,
    api_key,
    finish_gate_runs,
    make_version,
    tool_case,
)


def seed_every_kind(admin, author):
    """One of each object the API serves, and returns, per first path segment under
    `/api/v1/`, the values of the path parameters that name a real one."""
    Tool.objects.create(name="kb.search", description="search the knowledge base")
    gate = factories.dataset("gate-basics")
    frozen = factories.dataset_version(
        gate,
        cases=[tool_case("shipping", "How long is shipping?"), tool_case("refund", "Refund?")],
        checks=[TOOLS_CHECK],
    )
    draft = factories.dataset_version(
        gate, cases=[tool_case("shipping", "How long?")], checks=[TOOLS_CHECK], frozen=False
    )
    policy = PublishingPolicy.objects.create(
        name="Default", repetitions=1, min_case_pass_rate=1.0, created_by=admin
    )
    policy.gate_datasets.add(gate)
    agent = factories.agent("support-bot")
    GateDataset.objects.create(agent=agent, dataset=gate)  # chosen for it (a global policy's
    # gate datasets gate no agent by themselves)
    good, bad = make_version(agent, author, good=True), make_version(agent, author, good=False)
    passed = finish_gate_runs(RequestPublication(acting_user=author, agent_version=good).execute())
    blocked = finish_gate_runs(
        RequestPublication(acting_user=author, agent_version=bad).execute(), passed=False
    )
    bypass = RequestBypass(acting_user=admin, publish_request=blocked, reason=REASON).execute()
    run = Run.objects.filter(status=RunStatus.COMPLETED).first()
    trial = Trial.objects.filter(run=run).first()
    check = draft.checks.first()
    result = CheckResult.objects.create(
        trial=trial, check_config=frozen.checks.first(), score=1.0, status=CheckStatus.PASSED
    )
    schedule = CreateSchedule(
        acting_user=admin, agent=agent, dataset=gate, repetitions=1, interval_minutes=60
    ).execute()
    key, _ = api_key(admin, name="seeded")
    from production.models import RollbackProposal

    proposal = RollbackProposal.objects.create(
        agent=agent, from_version=good, to_version=bad, breach={"detail": "seeded breach"}
    )
    return {
        "agents": {"slug": agent.slug},
        "versions": {"id": good.pk},
        "datasets": {"id": gate.pk, "slug": gate.slug},
        "dataset-versions": {"id": draft.pk, "dataset_slug": gate.slug},
        "checks": {"id": check.pk},
        "cases": {"id": draft.case_versions.first().pk},
        "check-results": {"id": result.pk},
        "runs": {"id": run.pk},
        "schedules": {"id": schedule.pk},
        "trials": {"id": trial.pk},
        "policies": {"id": policy.pk},
        "api-keys": {"prefix": key.prefix},
        "publish-requests": {"id": passed.pk},
        "bypasses": {"id": bypass.pk},
        "rollback-proposals": {"id": proposal.pk},
        "audit": {"sequence": AuditEntry.objects.order_by("-sequence").first().sequence},
        "_frozen": DatasetVersion.objects.get(pk=frozen.pk),
    }
