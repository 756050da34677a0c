"""Shared fixtures: personas built once per test (an Editor, a Builder, a Publisher, an Admin and
an outsider), synchronous django-q2, a fast password hasher, and a live-database fixture for the
tests that start real worker processes."""

import os
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.db import connection

from tests.support import factories
from tests.support.workers import TEST_AGENT_CALLABLES, TEST_HOSTS

pytest_plugins = ["tests.support.judge_fixtures"]

# Parallel workers (`make test` runs pytest-xdist, one database per worker, made by
# pytest-django): each worker has its own demo ledger too, which the servers and clusters it
# starts inherit through the environment, so that no worker's verifiers read another's writes.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if _WORKER:
    _LEDGER = Path(settings.SHERLOCK_DEMO_LEDGER).with_name(f"demo-ledger-{_WORKER}.jsonl")
    os.environ["SHERLOCK_DEMO_LEDGER"] = str(_LEDGER)
    settings.SHERLOCK_DEMO_LEDGER = _LEDGER


@pytest.fixture(autouse=True, scope="session")
def _sync_tasks():
    """django-q2 runs tasks in-process during tests, unless a test starts a real cluster."""
    from django_q.conf import Conf

    Conf.SYNC = True
    yield


@pytest.fixture(autouse=True)
def _fast_hasher(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # The agents under test live in tests/ (tests.support.workers passes the same to real workers).
    settings.SHERLOCK_AGENT_CALLABLES = TEST_AGENT_CALLABLES.split(",")
    # The agents and webhook receivers under test listen on loopback: the tests' operator
    # allows that address by name, as a deployment would list its own (the default refuses it).
    settings.SHERLOCK_AGENT_HOSTS = TEST_HOSTS.split(",")
    settings.SHERLOCK_WEBHOOK_HOSTS = TEST_HOSTS.split(",")


@pytest.fixture
def editor(db):
    return factories.user("editor", role="Editor")


@pytest.fixture
def builder(db):
    return factories.user("builder", role="Builder")


@pytest.fixture
def publisher(db):
    return factories.user("publisher", role="Publisher")


@pytest.fixture
def admin_user(db):
    return factories.user("admin", role="Admin")


@pytest.fixture
def outsider(db):
    return factories.user("outsider")


@pytest.fixture
def password():
    return factories.PASSWORD


@pytest.fixture
def logged_in(client, password):
    """`logged_in(user)`: the test client, signed in as `user` (the admin tests' way in)."""

    def login(user):
        client.login(username=user.username, password=password)
        return client

    return login


def _audit_triggers(action):
    from importlib import import_module

    mig = import_module("governance.migrations.0002_roles_and_audit_trigger")
    if connection.vendor == "postgresql":
        statements = mig.POSTGRES_UP if action == "up" else mig.POSTGRES_DOWN
    else:
        statements = mig.SQLITE_UP if action == "up" else mig.SQLITE_DOWN
    with connection.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)


# The periodic tasks the migrations schedule (each `update_or_create`, so idempotent): put back
# after a transactional test's flush, as the role groups are, so that every later test (on
# this worker, in any order) sees the database as migrated.
MIGRATED_SCHEDULES = [
    ("evaluations.migrations.0004_reaper_schedule", "schedule_reaper"),
    ("governance.migrations.0003_bypass_expiry_schedule", "schedule_expiry"),
    ("governance.migrations.0006_audit_checkpoint_schedule", "schedule_checkpoints"),
    ("production.migrations.0002_trace_schedules", "schedule"),
    ("production.migrations.0003_online_rules_scores_proposals", "schedule_sweep"),
]


def _reschedule(apps):
    from importlib import import_module

    for module, name in MIGRATED_SCHEDULES:
        getattr(import_module(module), name)(apps, None)


@pytest.fixture
def _audit_triggers_restored(django_db_blocker):
    """Set up before `transactional_db`, so torn down after its flush: puts the triggers back,
    and the role groups and migrated schedules that the flush emptied (the tests after it need
    them)."""
    yield
    with django_db_blocker.unblock():
        _audit_triggers("up")
        from django.apps import apps

        from governance.people.roles import sync_role_groups

        sync_role_groups(apps)
        _reschedule(apps)


@pytest.fixture
def live_db(_audit_triggers_restored, transactional_db):
    """Committed data that other processes (a real qcluster) can read.

    The audit log's append-only trigger would stop the flush that ends a transactional test,
    so it is dropped just before that flush (this teardown) and put back right after it.
    """
    make_password("warm-up")
    yield
    _audit_triggers("down")


# The end-to-end tests: a browser on a live server, the client against a live server or a real
# install, real worker processes. Marked `e2e` so the split is visible (`-m "not e2e"` runs the
# rest in a few minutes); each module runs whole on one worker (`--dist loadfile`) with its own
# database, live server port and browser.
E2E_FIXTURES = {"server", "browser", "live_db", "live_server"}


def pytest_collection_modifyitems(items):
    for item in items:
        path = Path(str(item.fspath))
        if (
            "browser" in path.parts
            or item.get_closest_marker("slow")
            or E2E_FIXTURES & set(getattr(item, "fixturenames", ()))
        ):
            item.add_marker(pytest.mark.e2e)
