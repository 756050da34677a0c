"""The periodic bypass expiry: a bypass past its expiry is shown `expired` by the API and the
admin without anyone touching it, audited once with the system as actor; its schedule is
created once, by a migration."""

from datetime import timedelta

from django.utils import timezone

from governance.actions.request_bypass import RequestBypass
from governance.choices import BypassState
from governance.models import AuditEntry, Bypass
from governance.tasks import expire_bypasses
from tests.support.governance import REASON, api_client


def past_due(bypass):
    Bypass.objects.filter(pk=bypass.pk).update(expires_at=timezone.now() - timedelta(minutes=1))


def test_an_approved_bypass_past_its_expiry_is_expired_by_the_schedule(approved_bypass, admin_user):
    past_due(approved_bypass)
    assert expire_bypasses() == 1
    approved_bypass.refresh_from_db()
    assert approved_bypass.state == BypassState.EXPIRED
    entry = AuditEntry.objects.get(action="governance.bypass.expire")
    assert entry.actor_id is None and entry.target_id == str(approved_bypass.pk)
    body = api_client(admin_user).get(f"/api/v1/bypasses/{approved_bypass.pk}/").json()
    assert body["state"] == "expired"


def test_a_requested_bypass_past_its_expiry_is_expired_too(policy, blocked_request, admin_user):
    policy.bypass_requires_second_admin = True
    policy.save(update_fields=["bypass_requires_second_admin"])
    bypass = RequestBypass(
        acting_user=admin_user, publish_request=blocked_request, reason=REASON
    ).execute()
    past_due(bypass)
    expire_bypasses()
    bypass.refresh_from_db()
    assert bypass.state == BypassState.EXPIRED


def test_a_bypass_still_in_time_is_left_alone(approved_bypass):
    assert expire_bypasses() == 0
    approved_bypass.refresh_from_db()
    assert approved_bypass.state == BypassState.APPROVED


def test_a_second_tick_expires_nothing_again(approved_bypass):
    past_due(approved_bypass)
    expire_bypasses()
    assert expire_bypasses() == 0
    assert AuditEntry.objects.filter(action="governance.bypass.expire").count() == 1


def test_a_used_bypass_is_history_and_never_expires(approved_bypass):
    Bypass.objects.filter(pk=approved_bypass.pk).update(state=BypassState.USED)
    past_due(approved_bypass)
    assert expire_bypasses() == 0


def test_the_expiry_is_scheduled_once_by_a_migration(db):
    from importlib import import_module

    from django.apps import apps
    from django_q.models import Schedule

    migration = import_module("governance.migrations.0003_bypass_expiry_schedule")
    assert Schedule.objects.filter(name=migration.NAME).count() == 1  # the test DB migrated
    migration.schedule_expiry(apps, None)  # idempotent
    schedule = Schedule.objects.get(name=migration.NAME)
    assert schedule.func == "governance.tasks.expire_bypasses"
    assert (schedule.schedule_type, schedule.minutes, schedule.repeats) == ("I", 1, -1)
