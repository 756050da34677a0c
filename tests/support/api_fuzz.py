"""Schemathesis against the served schema: a small dataset of every object kind the
API serves, the path parameters that name those objects, and one function that runs an
operation's generated cases (valid and invalid) through the WSGI app and collects what broke:
a server error, an answer the schema does not describe, or a status it does not list.

Besides the generated cases, every integer parameter (path or query) is tried just beyond a
64-bit signed integer, 2**63 and -2**63-1 (`boundary_cases`): the first values no database
column holds, which random generation reaches only by luck (`?run=2**63` was
SQLite's `OverflowError`).

The seeded objects come from `api_world.seed_every_kind`. The WSGI app runs in the test's
thread, inside its transaction, so the seeded rows are
visible; Django's `close_old_connections` is unhooked from the request signals for the
duration (as Django's own test client does), or the first request would close the
connection of the open transaction.
"""

import contextlib
import os

from django.core import signals
from django.core.cache import cache
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

SCHEMA_PATH = "/api/schema/"
BOUNDARIES = (2**63, -(2**63) - 1)


@contextlib.contextmanager
def wsgi_in_test_transaction():
    for signal in (signals.request_started, signals.request_finished):
        signal.disconnect(close_old_connections)
    try:
        yield
    finally:
        for signal in (signals.request_started, signals.request_finished):
            signal.connect(close_old_connections)


def real_path_parameters(operation, seeded):
    """The path parameters naming a seeded object for `operation`, or None (no parameters)."""
    names = [p.name for p in operation.path_parameters]
    if not names:
        return None
    segment = operation.path.removeprefix("/api/v1/").split("/")[0]
    values = seeded.get(segment, {})
    return {name: values[name] for name in names if name in values} or None


def boundary_cases(operation, real):
    """One case per integer parameter of `operation` and value of `BOUNDARIES`, the other path
    parameters naming a seeded object (or "1")."""
    for parameter in operation.definition.raw.get("parameters", []):
        place, name = parameter.get("in"), parameter.get("name")
        if place not in ("path", "query"):
            continue
        if parameter.get("schema", {}).get("type") not in ("integer", "number"):
            continue
        for value in BOUNDARIES:
            path = {p.name: (real or {}).get(p.name, "1") for p in operation.path_parameters}
            query = {}
            (path if place == "path" else query)[name] = value
            yield operation.Case(path_parameters=path or None, query=query or None)


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
    failures, statuses = [], {}
    cache.clear()  # the throttle's counts: a deep run would otherwise test only the 429

    def call(case):
        response = case.call(headers=headers)
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        try:
            case.validate_response(response, checks=checks, headers=headers)
        except FailureGroup as exc:  # keep its report and go on: every operation is tried
            if len(failures) < 3:
                failures.append(str(exc)[:2500])

    for case in boundary_cases(operation, real):
        call(case)

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
        call(case)

    if "SHERLOCK_FUZZ_SEED" in os.environ:
        run = seed(int(os.environ["SHERLOCK_FUZZ_SEED"]))(run)
    run()
    if os.environ.get("SHERLOCK_FUZZ_STATS"):
        print(operation.label, dict(sorted(statuses.items())))
    return failures
