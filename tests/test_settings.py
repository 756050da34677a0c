"""Settings fail loudly on bad values, and the start-up check guards django-q2's retry."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from evaluations.system_checks import q_cluster_retry_longer_than_timeout
from sherlock import settings as sherlock_settings

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("helper", "name", "value"),
    [
        (sherlock_settings.env_bool, "X_BOOL", "maybe"),
        (sherlock_settings.env_int, "X_INT", "ten"),
    ],
)
def test_bad_values_fail_loudly(monkeypatch, helper, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ImproperlyConfigured, match=name):
        helper(name, 1) if helper is sherlock_settings.env_int else helper(name)


def test_a_choice_outside_its_list_fails(monkeypatch):
    monkeypatch.setenv("SHERLOCK_JUDGE_MAX_TOKENS_PARAM", "max_output_tokens")
    with pytest.raises(ImproperlyConfigured, match="SHERLOCK_JUDGE_MAX_TOKENS_PARAM"):
        sherlock_settings.env_choice(
            "SHERLOCK_JUDGE_MAX_TOKENS_PARAM", "auto", ("auto", "max_tokens")
        )


def test_integer_below_its_minimum_fails(monkeypatch):
    monkeypatch.setenv("X_INT", "0")
    with pytest.raises(ImproperlyConfigured, match="minimum"):
        sherlock_settings.env_int("X_INT", 5, minimum=1)


def test_a_database_url_with_an_unknown_scheme_stops_start_up():
    env = {**os.environ, "DATABASE_URL": "mysql://nobody@nowhere/db"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "DATABASE_URL" in result.stderr


def test_a_leftover_judge_transport_setting_is_ignored_with_one_warning():
    env = {**os.environ, "SHERLOCK_JUDGE_TRANSPORT": "keepalive"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("SHERLOCK_JUDGE_TRANSPORT is set but ignored") == 1


def test_sqlite_default_shares_the_file_with_a_worker(settings):
    db = settings.DATABASES["default"]
    if db["ENGINE"] != "django.db.backends.sqlite3":
        pytest.skip("SQLite-only setting")
    assert db["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert "journal_mode=WAL" in db["OPTIONS"]["init_command"]
    assert db["OPTIONS"]["timeout"] >= 10


def test_redis_url_switches_the_broker():
    code = "from django.conf import settings; print(sorted(settings.Q_CLUSTER))"
    env = {**os.environ, "REDIS_URL": "redis://127.0.0.1:6379/3"}
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import django, os; os.environ.setdefault("
            f"'DJANGO_SETTINGS_MODULE','sherlock.settings'); django.setup(); {code}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "'redis'" in out and "'orm'" not in out


def test_start_up_check_refuses_retry_not_longer_than_timeout(settings):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 600, "retry": 600}
    errors = q_cluster_retry_longer_than_timeout()
    assert [e.id for e in errors] == ["sherlock.E002"]


def test_start_up_check_accepts_the_default(settings):
    assert q_cluster_retry_longer_than_timeout() == []


def _check_fails(env):
    """`manage.py check` under `env`: it must fail; returns the finished process."""
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    return result


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"SHERLOCK_AUDIT_KEY": "short"}, "SHERLOCK_AUDIT_KEY is shorter than 32 characters"),
        (
            {"SHERLOCK_AUDIT_KEY": "", "SHERLOCK_AUDIT_CHECKPOINT_FILE": "/tmp/checkpoints.jsonl"},
            "SHERLOCK_AUDIT_KEY is not",
        ),
        (
            {"SHERLOCK_AUDIT_KEY": "k" * 32, "SHERLOCK_AUDIT_CHECKPOINT_FILE": "/nowhere/c.jsonl"},
            "its directory does not exist",
        ),
        ({"SHERLOCK_AUDIT_CHECKPOINT_MINUTES": "0"}, "SHERLOCK_AUDIT_CHECKPOINT_MINUTES"),
    ],
)
def test_a_bad_audit_checkpoint_setting_stops_start_up(env, message):
    result = _check_fails(env)
    assert message in result.stderr


def test_checkpoints_off_is_a_deploy_warning(settings):
    from governance.system_checks import audit_checkpoints_on

    settings.SHERLOCK_AUDIT_KEY = ""
    assert [w.id for w in audit_checkpoints_on()] == ["sherlock.W001"]
    settings.SHERLOCK_AUDIT_KEY = "k" * 32
    assert audit_checkpoints_on() == []


@pytest.mark.parametrize(
    "env",
    [
        {"SHERLOCK_API_KEY_DAYS": "400", "SHERLOCK_API_KEY_MAX_DAYS": "365"},
        {"SHERLOCK_API_KEY_DAYS": "0"},
        {"SHERLOCK_API_KEY_MAX_DAYS": "forever"},
    ],
)
def test_api_key_lifetimes_beyond_their_bounds_stop_start_up(env):
    result = _check_fails(env)
    assert "SHERLOCK_API_KEY_" in result.stderr


@pytest.mark.parametrize("value", ["0", "many"])
def test_database_connections_per_worker_must_be_a_small_positive_number(value):
    result = _check_fails({"SHERLOCK_DB_CONNECTIONS": value})
    assert "SHERLOCK_DB_CONNECTIONS" in result.stderr


def test_attestations_on_refuse_to_start_without_a_key_or_with_one_others_may_read(tmp_path):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from governance.attestations.keys import private_pem

    refused = _check_fails({"SHERLOCK_ATTESTATIONS": "true", "SHERLOCK_ATTESTATION_KEY_FILE": ""})
    assert "no signing key is configured" in refused.stderr
    missing = _check_fails({"SHERLOCK_ATTESTATION_KEY_FILE": str(tmp_path / "none.pem")})
    assert "does not exist" in missing.stderr
    key = tmp_path / "key.pem"
    pem = private_pem(Ed25519PrivateKey.generate())
    key.write_bytes(pem)
    key.chmod(0o644)
    readable = _check_fails({"SHERLOCK_ATTESTATION_KEY_FILE": str(key)})
    assert "readable by others than its owner" in readable.stderr
    assert pem.decode() not in readable.stderr + readable.stdout
    key.chmod(0o600)
    fine = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**os.environ, "SHERLOCK_ATTESTATION_KEY_FILE": str(key)},
        capture_output=True,
        text=True,
    )
    assert fine.returncode == 0, fine.stderr
