"""API keys: stored hashed and shown once, named, expiring (a default and a maximum), revocable
by their owner and an Admin (the role matrix), with their last use; expired, revoked and
deactivated keys answer 401, also for a key this process remembers (a read re-checks it with one
statement; roles changed elsewhere lag reads by SHERLOCK_API_AUTH_CACHE_SECONDS, never verbs); the
migration converts plaintext tokens to hashed keys."""

import hashlib
import json
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.db import connection
from django.utils import timezone

from governance.actions.create_api_key import CreateAPIKey
from governance.actions.revoke_api_key import RevokeAPIKey
from governance.api import authentication
from governance.models import APIKey, AuditEntry
from sherlock.core.errors import ActionConflict, ActionDenied, ActionInvalid
from tests.support import factories
from tests.support.governance import (
    GLOBAL_ADMINS,
    api_client,
    api_key,
    key_client,
    persona_id,
    split,
)

may_revoke, may_not_revoke = (
    pytest.mark.parametrize("role,scope", personas, ids=persona_id)
    for personas in split(GLOBAL_ADMINS)
)


def everything_stored():
    """Every API key row and audit entry, as text: where a leaked secret would show."""
    rows = list(APIKey.objects.values())
    return json.dumps(rows, default=str) + "".join(e.canonical() for e in AuditEntry.objects.all())


# --- issued: hashed, shown once, named, expiring ------------------------------------------------


def test_a_key_created_through_the_api_is_shown_once_and_stored_hashed(builder):
    response = api_client(builder).post("/api/v1/api-keys/", {"name": "ci pipeline"})
    assert response.status_code == 201, response.json()
    created = response.json()
    secret = created["key"]
    assert created["name"] == "ci pipeline" and created["state"] == "active"
    assert secret.startswith(created["prefix"] + ".")

    assert secret not in everything_stored()
    listed = api_client(builder).get("/api/v1/api-keys/").json()["results"]
    ci = [k for k in listed if k["prefix"] == created["prefix"]]
    assert ci and "key" not in ci[0] and secret not in json.dumps(listed)
    assert key_client(secret).get("/api/v1/agents/").status_code == 200


def test_a_key_expires_after_the_default_days_and_never_after_the_maximum(builder, settings):
    settings.SHERLOCK_API_KEY_DAYS, settings.SHERLOCK_API_KEY_MAX_DAYS = 30, 90
    client = api_client(builder)
    default = client.post("/api/v1/api-keys/", {"name": "default"}).json()
    expires = APIKey.objects.get(prefix=default["prefix"]).expiry_date
    assert timedelta(days=29) < expires - timezone.now() <= timedelta(days=30)

    longest = client.post("/api/v1/api-keys/", {"name": "longest", "days": 90})
    assert longest.status_code == 201
    too_long = client.post("/api/v1/api-keys/", {"name": "too long", "days": 91})
    assert too_long.status_code == 400 and too_long.json()["field"] == "days"
    assert not APIKey.objects.filter(name="too long").exists()


@pytest.mark.parametrize("name", ["", "   ", "x" * 51])
def test_a_key_needs_a_short_name(builder, name):
    response = api_client(builder).post("/api/v1/api-keys/", {"name": name})
    assert response.status_code == 400
    assert not APIKey.objects.filter(user=builder).exclude(name="test client").exists()


def test_issuing_is_audited_without_the_secret(builder):
    _, secret = CreateAPIKey(acting_user=builder, user=builder, name="laptop").execute()
    entry = AuditEntry.objects.get(action="governance.apikey.create")
    assert entry.actor_id == builder.pk and entry.target_id == str(builder.pk)
    assert entry.after["name"] == "laptop" and entry.after["prefix"] == secret.split(".")[0]
    assert secret not in entry.canonical()


@may_revoke
def test_an_admin_may_issue_a_key_to_another_user(role, scope, persona, builder):
    admin = persona(role, scope)
    api_key_row, _ = CreateAPIKey(acting_user=admin, user=builder, name="for ci").execute()
    assert api_key_row.user == builder and api_key_row.issued_by == admin


@may_not_revoke
def test_no_one_else_may_issue_a_key_to_another_user(role, scope, persona, builder):
    user = persona(role, scope)
    with pytest.raises(ActionDenied):
        CreateAPIKey(acting_user=user, user=builder, name="stolen").execute()
    assert not APIKey.objects.filter(user=builder).exists()
    refused = AuditEntry.objects.get(action="governance.apikey.refused")
    assert refused.actor_id == user.pk and refused.after["verb"] == "create"


def test_an_inactive_user_gets_no_key(admin_user, builder):
    builder.is_active = False
    builder.save(update_fields=["is_active"])
    with pytest.raises(ActionConflict):
        CreateAPIKey(acting_user=admin_user, user=builder, name="ci").execute()


# --- used: expiry, revocation, last use ----------------------------------------------------------


def test_an_expired_key_answers_401(builder):
    row, secret = api_key(builder, days=1)
    client = key_client(secret)
    assert client.get("/api/v1/agents/").status_code == 200
    APIKey.objects.filter(pk=row.pk).update(expiry_date=timezone.now() - timedelta(seconds=1))
    response = client.get("/api/v1/agents/")
    assert response.status_code == 401
    assert "expired" in response.json()["detail"]


def test_a_revoked_key_answers_401_from_the_next_request_on(builder):
    row, secret = api_key(builder)
    client = key_client(secret)
    assert client.get("/api/v1/agents/").status_code == 200
    RevokeAPIKey(acting_user=builder, api_key=row).execute()
    response = client.get("/api/v1/agents/")
    assert response.status_code == 401 and "revoked" in response.json()["detail"]


def test_a_wrong_secret_with_a_real_prefix_answers_401(builder):
    row, secret = api_key(builder)
    forged = f"{row.prefix}.{'x' * 32}"
    assert key_client(forged).get("/api/v1/agents/").status_code == 401
    assert key_client(secret[:-1]).get("/api/v1/agents/").status_code == 401
    assert key_client("nonsense").get("/api/v1/agents/").status_code == 401


def test_a_deactivated_users_key_answers_401(builder):
    _, secret = api_key(builder)
    builder.is_active = False
    builder.save(update_fields=["is_active"])
    assert key_client(secret).get("/api/v1/agents/").status_code == 401


def test_the_last_use_is_recorded_to_the_minute(builder):
    row, secret = api_key(builder)
    assert row.last_used_at is None
    client = key_client(secret)

    def used_after(seconds_ago):
        """Pretend the key was last used `seconds_ago`, make a request, read the last use."""
        then = timezone.now() - timedelta(seconds=seconds_ago)
        APIKey.objects.filter(pk=row.pk).update(last_used_at=then)
        client.get("/api/v1/agents/")
        return then, APIKey.objects.get(pk=row.pk).last_used_at

    before = timezone.now()
    client.get("/api/v1/agents/")
    assert APIKey.objects.get(pk=row.pk).last_used_at >= before
    then, recorded = used_after(30)
    assert recorded == then  # not written again within the minute
    then, recorded = used_after(120)
    assert recorded > then + timedelta(seconds=100)


# --- revoked: by the owner or an Admin (the role matrix) -----------------------------------------


def test_the_owner_revokes_their_key_through_the_api(builder):
    row, secret = api_key(builder, name="old laptop")
    client = api_client(builder)
    response = client.post(f"/api/v1/api-keys/{row.prefix}/revoke/", {"reason": "laptop lost"})
    assert response.status_code == 200, response.json()
    assert response.json()["state"] == "revoked" and response.json()["revoked_by"] == "builder"
    again = client.post(f"/api/v1/api-keys/{row.prefix}/revoke/")
    assert (again.status_code, again.json()["code"]) == (409, "already_revoked")
    entry = AuditEntry.objects.get(action="governance.apikey.revoke")
    assert entry.actor_id == builder.pk and entry.reason == "laptop lost"
    assert secret not in entry.canonical()


@may_revoke
def test_an_admin_may_revoke_anyones_key(role, scope, persona, builder):
    row, _ = api_key(builder)
    response = api_client(persona(role, scope)).post(f"/api/v1/api-keys/{row.prefix}/revoke/")
    assert response.status_code == 200, response.json()
    row.refresh_from_db()
    assert row.revoked and row.revoked_at is not None


@may_not_revoke
def test_no_one_else_may_revoke_a_key(role, scope, persona, builder):
    user = persona(role, scope)
    row, _ = api_key(builder)
    # Another user's keys are not even listed to them (404, the attempt audited)...
    response = api_client(user).post(f"/api/v1/api-keys/{row.prefix}/revoke/")
    assert response.status_code == 404
    hidden = AuditEntry.objects.get(action="governance.apikey.refused")
    assert hidden.actor_id == user.pk and hidden.after["code"] == "not_found"
    # ...and the action itself refuses them, audited, whoever calls it.
    with pytest.raises(ActionDenied):
        RevokeAPIKey(acting_user=user, api_key=row).execute()
    row.refresh_from_db()
    assert not row.revoked
    refused = AuditEntry.objects.filter(action="governance.apikey.refused").exclude(pk=hidden.pk)
    assert refused.get().actor_id == user.pk and refused.get().after["verb"] == "revoke"


def test_users_list_only_their_own_keys_and_an_admin_everyones(builder, publisher, admin_user):
    api_key(builder, name="builder's")
    api_key(publisher, name="publisher's")
    names = {k["name"] for k in api_client(builder).get("/api/v1/api-keys/").json()["results"]}
    assert "builder's" in names and "publisher's" not in names
    everyone = api_client(admin_user).get("/api/v1/api-keys/?user=publisher").json()["results"]
    assert [k["name"] for k in everyone] == ["publisher's"]


def test_the_key_list_takes_a_constant_number_of_queries(builder, django_assert_num_queries):
    client = api_client(builder)
    client.get("/api/v1/api-keys/")  # the key's first use records its last_used_at
    with django_assert_num_queries(4):  # the key's re-check, is it an Admin, count, page
        client.get("/api/v1/api-keys/")
    for number in range(5):
        api_key(builder, name=f"key {number}", issued_by=builder)
    with django_assert_num_queries(4):
        assert len(client.get("/api/v1/api-keys/").json()["results"]) == 6


def test_the_schema_names_the_token_header(builder):
    schema = api_client(builder).get("/api/schema/?format=json").json()
    scheme = schema["components"]["securitySchemes"]["tokenAuth"]
    assert scheme["in"] == "header" and scheme["name"] == "Authorization"


# --- the plaintext tokens of before: converted by migration 0007 --------------------------------


@pytest.fixture
def legacy_tokens(db):
    """DRF's authtoken table as an older Sherlock left it, with two plaintext tokens."""
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, "
            "created timestamp with time zone, "
            "user_id integer)"
        )
    yield
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE authtoken_token")


def test_the_migration_converts_plaintext_tokens_to_hashed_keys(legacy_tokens, builder, capsys):
    from importlib import import_module

    from django.apps import apps

    migration = import_module("governance.migrations.0008_hash_plaintext_tokens")
    legacy = "a3f1c2e4b5d6978812345678901234567890abcd"
    clash = "a3f1c2e4" + "f" * 32  # the same first eight characters: cannot be told apart
    other = factories.user("other")
    with connection.cursor() as cursor:
        for key, user in ((legacy, builder), (clash, other)):
            cursor.execute(
                "INSERT INTO authtoken_token VALUES (%s, %s, %s)", [key, timezone.now(), user.pk]
            )

    migration.convert_tokens(apps, SimpleNamespace(connection=connection))

    assert "1 plaintext token(s) converted" in capsys.readouterr().out
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM authtoken_token")
        assert cursor.fetchone()[0] == 0  # no plaintext left at rest
    converted = APIKey.objects.get(user=builder)
    assert converted.name == "converted token" and legacy not in everything_stored()
    assert converted.expiry_date > timezone.now() + timedelta(days=80)
    assert key_client(legacy).get("/api/v1/agents/").status_code == 200  # the same header works
    assert key_client(clash).get("/api/v1/agents/").status_code == 401
    assert not APIKey.objects.filter(user=other).exists()


def test_the_migration_does_nothing_without_the_old_table(db):
    from importlib import import_module

    from django.apps import apps

    migration = import_module("governance.migrations.0008_hash_plaintext_tokens")
    migration.convert_tokens(apps, SimpleNamespace(connection=connection))
    assert not APIKey.objects.exists()


def test_invalid_days_are_refused_by_the_action(builder):
    with pytest.raises(ActionInvalid) as refused:
        CreateAPIKey(acting_user=builder, user=builder, name="x", days=0).execute()
    assert refused.value.field == "days"


# --- remembered: a read relies on what this process verified a moment ago ----------


def remembered(builder):
    """A key of `builder` and a client whose first read made this process remember it."""
    row, secret = api_key(builder)
    client = key_client(secret)
    assert client.get("/api/v1/runs/").status_code == 200
    return row, client


def later(monkeypatch, seconds):
    """Move the clock the process's memory of keys reads by `seconds`."""
    now = authentication.time.monotonic() + seconds
    monkeypatch.setattr(authentication.time, "monotonic", lambda: now)


def test_a_remembered_key_is_re_checked_by_one_statement_instead_of_three_queries(
    builder, django_assert_num_queries
):
    _, client = remembered(builder)
    with django_assert_num_queries(2) as captured:  # the re-check, the count (no run: no page)
        assert client.get("/api/v1/runs/").status_code == 200
    recheck = captured.captured_queries[0]["sql"]
    assert "revoked" in recheck and "is_active" in recheck and "is_superuser" in recheck


def test_a_key_revoked_by_another_process_answers_401_from_the_next_read_on(builder):
    row, client = remembered(builder)
    # A queryset update, as another worker's revocation is to this process: no signal here.
    APIKey.objects.filter(pk=row.pk).update(revoked=True)
    response = client.get("/api/v1/runs/")
    assert response.status_code == 401 and "revoked" in response.json()["detail"]


def test_a_remembered_key_expires_on_time_and_its_user_is_deactivated_at_once(builder, outsider):
    row, client = remembered(builder)
    APIKey.objects.filter(pk=row.pk).update(expiry_date=timezone.now() - timedelta(seconds=1))
    response = client.get("/api/v1/runs/")
    assert response.status_code == 401 and "expired" in response.json()["detail"]
    _, client = remembered(outsider)
    type(outsider).objects.filter(pk=outsider.pk).update(is_active=False)
    assert client.get("/api/v1/runs/").status_code == 401


def test_a_role_removed_in_this_process_is_seen_by_the_next_read(admin_user):
    _, client = remembered(admin_user)
    assert client.get("/api/v1/audit/").status_code == 200
    admin_user.groups.clear()  # m2m_changed: this process forgets the keys it remembered
    assert client.get("/api/v1/audit/").status_code == 403


def test_a_role_removed_by_another_process_lags_reads_by_the_memory_but_never_verbs(
    admin_user, builder, settings, monkeypatch
):
    settings.SHERLOCK_API_AUTH_CACHE_SECONDS = 5
    row, client = remembered(admin_user)
    assert client.get("/api/v1/audit/").status_code == 200
    # The membership row deleted as another process's RevokeRole would be, to this one: no
    # m2m_changed signal reaches it.
    type(admin_user).groups.through.objects.filter(user=admin_user).delete()
    assert client.get("/api/v1/audit/").status_code == 200  # within the 5 seconds
    # A verb loads the key, the user and the roles afresh: no longer an Admin.
    other, _ = api_key(builder)
    refused = client.post(f"/api/v1/api-keys/{other.prefix}/revoke/", {"reason": "left"})
    assert refused.status_code in (403, 404)
    assert not APIKey.objects.get(pk=other.pk).revoked
    later(monkeypatch, 5)
    assert client.get("/api/v1/audit/").status_code == 403


def test_a_user_made_superuser_elsewhere_is_loaded_afresh(builder):
    _, client = remembered(builder)
    type(builder).objects.filter(pk=builder.pk).update(is_superuser=True)
    assert client.get("/api/v1/audit/").status_code == 200  # a superuser reads the audit log


def test_with_no_memory_every_read_loads_the_key(builder, settings, django_assert_num_queries):
    settings.SHERLOCK_API_AUTH_CACHE_SECONDS = 0
    _, client = remembered(builder)
    # key + user, the user's and groups' permissions, the count (no run: no page)
    with django_assert_num_queries(4):
        assert client.get("/api/v1/runs/").status_code == 200


def test_the_memory_keeps_no_secret(builder):
    _, secret = api_key(builder)
    assert key_client(secret).get("/api/v1/runs/").status_code == 200
    assert secret not in repr(list(authentication._verified))
    assert hashlib.sha256(secret.encode()).hexdigest() in authentication._verified
