"""Schemathesis against the served schema: every operation of `/api/schema/`, with
generated valid and invalid input and every integer parameter just beyond 64 bits, as a role that
may use it (a global Admin) and as one that may not (an outsider), answers no server error,
nothing the schema does not describe and no status it does not list; and so do workflows of
calls chained through the links schemathesis infers from the schema (an object listed or created,
then read or changed through the id the answer gave), as the Admin, who may make the
objects the links follow."""

import os

import pytest

from tests.support.api_world import seed_every_kind
from tests.support.governance import auth_header

if os.environ.get("CI"):  # requirements-dev.txt installs it for `make test`: CI never skips
    import schemathesis
else:
    schemathesis = pytest.importorskip("schemathesis")

from django.core.cache import cache
from django.db import transaction
from schemathesis.core.failures import FailureGroup

from tests.support.api_fuzz import SCHEMA_PATH, fuzz, wsgi_in_test_transaction

# Per operation and persona: the whole schema in under a minute per persona on 2 cores.
# SHERLOCK_FUZZ_EXAMPLES=200 (and SHERLOCK_FUZZ_SEED) digs deeper, by hand.
EXAMPLES = int(os.environ.get("SHERLOCK_FUZZ_EXAMPLES", "12"))
# Workflows (hypothesis's scenarios) and calls per workflow of the stateful test.
WORKFLOWS = int(os.environ.get("SHERLOCK_FUZZ_WORKFLOWS", "60"))
STEPS = int(os.environ.get("SHERLOCK_FUZZ_STEPS", "8"))


@pytest.fixture
def served_schema(db):
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        response_schema_conformance,
        status_code_conformance,
    )

    from sherlock.wsgi import application

    with wsgi_in_test_transaction():
        schema = schemathesis.openapi.from_wsgi(SCHEMA_PATH, application)
        yield schema, [not_a_server_error, response_schema_conformance, status_code_conformance]


@pytest.mark.parametrize("who", ["admin", "outsider"])
def test_no_operation_answers_a_server_error_or_breaks_its_schema(
    served_schema, admin_user, builder, outsider, who
):
    schema, checks = served_schema
    seeded = seed_every_kind(admin_user, builder)
    user = {"admin": admin_user, "outsider": outsider}[who]
    headers = {"Authorization": auth_header(user)}
    failures = {}
    for result in schema.get_all_operations():
        operation = result.ok()
        found = fuzz(operation, headers, seeded, checks, EXAMPLES)
        if found:
            failures[operation.label] = found
    assert not failures, "\n\n".join(f"{label}:\n{found[0]}" for label, found in failures.items())


def test_workflows_of_linked_calls_answer_no_server_error_nor_break_the_schema(
    served_schema, admin_user, builder
):
    from hypothesis import HealthCheck, Phase, settings

    schema, checks = served_schema
    seed_every_kind(admin_user, builder)
    headers = {"Authorization": auth_header(admin_user)}
    failures, calls = [], []

    class Workflow(schema.as_state_machine()):
        # Each workflow starts from the seeded world and is rolled back at its end: a
        # workflow that depended on what an earlier one left would not replay the same, and
        # hypothesis refuses a test whose runs differ on the same input.
        def setup(self):
            cache.clear()  # the throttle's counts: a workflow is not a burst
            self.savepoint = transaction.atomic()
            self.savepoint.__enter__()

        def teardown(self):
            transaction.set_rollback(True)
            self.savepoint.__exit__(None, None, None)

        def step(self, input):
            calls.append(input.transition is not None)  # a call made through a link
            return super().step(input)

        def get_call_kwargs(self, case):
            return {"headers": headers}

        def validate_response(self, response, case, **kwargs):
            try:
                case.validate_response(response, checks=checks, headers=headers)
            except FailureGroup as exc:  # keep its report and go on with other workflows
                if len(failures) < 3:
                    failures.append(f"{case.operation.label}:\n{str(exc)[:2500]}")

    Workflow.run(
        settings=settings(
            max_examples=WORKFLOWS,
            stateful_step_count=STEPS,
            deadline=None,
            database=None,
            derandomize="SHERLOCK_FUZZ_SEED" not in os.environ,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
    )
    if os.environ.get("SHERLOCK_FUZZ_STATS"):
        print(f"{len(calls)} calls, {sum(calls)} through a link")
    assert calls and any(calls), "no workflow followed a link"
    assert not failures, "\n\n".join(failures)
