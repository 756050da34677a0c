"""Schemathesis against the served schema (issue 15): a small dataset of every object kind the
API serves, the path parameters that name those objects, and one function that runs an
operation's generated cases (valid and invalid) through the WSGI app and collects what broke:
a server error, an answer the schema does not describe, or a status it does not list.

The WSGI app runs in the test's thread, inside its transaction, so the seeded rows are
visible; Django's `close_old_connections` is unhooked from the request signals for the
duration (as Django's own test client does), or the first request would close the
connection of the open transaction.
"""

import contextlib
import os

from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from agents.models import Tool
from evaluations.actions.create_schedule import CreateSchedule
from evaluations.choices import CheckStatus, RunStatus
from evaluations.models import CheckResult, DatasetVersion, Run, Trial
from governance.actions.request_bypass import RequestBypass
from governance.actions.request_publication import RequestPublication
from governance.models import AuditEntry, PublishingPolicy
from tests.support import factories
from tests.support.governance import (
    REASON,
    TOOLS_CHECK,
    finish_gate_runs,
    make_version,
    tool_case,
)

SCHEMA_PATH = "/api/schema/"


@contextlib.contextmanager
def wsgi_in_test_transaction():
    for signal in (signals.request_started, signals.request_finished):
        signal.disconnect(close_old_connections)
    try:
        yield
    finally:
        for signal in (signals.request_started, signals.request_finished):
            signal.connect(close_old_connections)


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
        "publish-requests": {"id": passed.pk},
        "bypasses": {"id": bypass.pk},
        "audit": {"sequence": AuditEntry.objects.order_by("-sequence").first().sequence},
        "_frozen": DatasetVersion.objects.get(pk=frozen.pk),
    }


def real_path_parameters(operation, seeded):
    """The path parameters naming a seeded object for `operation`, or None (no parameters)."""
    names = [p.name for p in operation.path_parameters]
    if not names:
        return None
    segment = operation.path.removeprefix("/api/v1/").split("/")[0]
    values = seeded.get(segment, {})
    return {name: values[name] for name in names if name in values} or None


def fuzz(operation, headers, seeded, checks, max_examples):
    """Run `max_examples` generated cases of `operation` (valid and invalid, on random and on
    seeded objects) with `headers`; the failures found, as text (empty: none)."""
    from schemathesis import GenerationMode
    from schemathesis.core.failures import FailureGroup

    modes = [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]
    strategies = [operation.as_strategy(generation_mode=mode) for mode in modes]
    real = real_path_parameters(operation, seeded)
    if real:
        strategies += [
            operation.as_strategy(generation_mode=mode, path_parameters=real) for mode in modes
        ]
    failures = []

    @given(case=st.one_of(strategies))
    @settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        derandomize="SHERLOCK_FUZZ_SEED" not in os.environ,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def run(case):
        response = case.call(headers=headers)
        try:
            case.validate_response(response, checks=checks, headers=headers)
        except FailureGroup as exc:  # keep its report and go on: every operation is tried
            if len(failures) < 3:
                failures.append(str(exc)[:2500])

    if "SHERLOCK_FUZZ_SEED" in os.environ:
        run = seed(int(os.environ["SHERLOCK_FUZZ_SEED"]))(run)
    run()
    return failures
