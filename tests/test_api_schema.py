"""Schemathesis against the served schema (issue 15): every operation of `/api/schema/`, with
generated valid and invalid input, as a role that may use it (a global Admin) and as one that
may not (an outsider), answers no server error, nothing the schema does not describe and no
status it does not list."""

import os

import pytest

from tests.support.api_world import seed_every_kind
from tests.support.governance import auth_header

if os.environ.get("CI"):  # requirements-dev.txt installs it for `make test`: CI never skips
    import schemathesis
else:
    schemathesis = pytest.importorskip("schemathesis")

from tests.support.api_fuzz import SCHEMA_PATH, fuzz, wsgi_in_test_transaction  # noqa: E402

# Per operation and persona: the whole schema in under a minute per persona on 2 cores.
# SHERLOCK_FUZZ_EXAMPLES=200 (and SHERLOCK_FUZZ_SEED) digs deeper, by hand.
EXAMPLES = int(os.environ.get("SHERLOCK_FUZZ_EXAMPLES", "12"))


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
