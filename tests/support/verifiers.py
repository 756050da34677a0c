"""A destination for verifiers in tests: the `ledger` database alias, and a trial ready for
`collect_evidence` (its case names an outcome check, its agent version offers tools)."""

from contextlib import contextmanager

from django.db import DEFAULT_DB_ALIAS, connections
from django.utils import timezone

from evaluations.models import Run, Trial
from tests.support import factories

LEDGER_DB = "ledger"  # the database alias the SQL verifiers of the tests read


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
