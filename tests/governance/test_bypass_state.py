"""One writer of `Bypass.state`: every verb that moves a bypass goes through
`governance.actions._bypass_state.move_bypass`, a compare-and-set guarded by
`BYPASS_TRANSITIONS`, and a transition that table does not declare is refused."""

import sys
from datetime import timedelta
from itertools import product

import pytest
from django.db.models import QuerySet
from django.utils import timezone

from governance import tasks
from governance.actions._bypass_state import move_bypass
from governance.actions.approve_bypass import ApproveBypass
from governance.actions.deny_bypass import DenyBypass
from governance.actions.publish_version import PublishVersion
from governance.actions.request_bypass import RequestBypass
from governance.actions.request_publication import RequestPublication
from governance.actions.revoke_bypass import RevokeBypass
from governance.choices import BYPASS_TRANSITIONS, BypassState
from governance.models import Bypass
from tests.support import factories
from tests.support.governance import REASON


def _inside_move_bypass():
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code is move_bypass.__code__:
            return True
        frame = frame.f_back
    return False


@pytest.fixture
def state_writes(monkeypatch):
    """Every write of a bypass's state, as (state, how, made by move_bypass): `update` for a
    queryset update, `create` or `save` for a row saved with its state."""
    writes = []
    update, save = QuerySet.update, Bypass.save

    def spy_update(self, **fields):
        if self.model is Bypass and "state" in fields:
            writes.append((fields["state"], "update", _inside_move_bypass()))
        return update(self, **fields)

    def spy_save(self, *args, **kwargs):
        update_fields = kwargs.get("update_fields")
        if update_fields is None or "state" in update_fields:
            how = "create" if self._state.adding else "save"
            writes.append((self.state, how, _inside_move_bypass()))
        return save(self, *args, **kwargs)

    monkeypatch.setattr(QuerySet, "update", spy_update)
    monkeypatch.setattr(Bypass, "save", spy_save)
    return writes


@pytest.fixture
def second_admin(db):
    return factories.user("second-admin", role="Admin")


@pytest.fixture
def four_eyes(policy):
    policy.bypass_requires_second_admin = True
    policy.save(update_fields=["bypass_requires_second_admin"])


@pytest.fixture
def requested_bypass(four_eyes, admin_user, blocked_request):
    return RequestBypass(
        acting_user=admin_user, publish_request=blocked_request, reason=REASON
    ).execute()


def request_bypass(ctx):
    return RequestBypass(
        acting_user=ctx("admin_user"), publish_request=ctx("blocked_request"), reason=REASON
    ).execute()


def approve(ctx):
    ApproveBypass(acting_user=ctx("second_admin"), bypass=ctx("requested_bypass")).execute()
    return ctx("requested_bypass")


def deny(ctx):
    DenyBypass(acting_user=ctx("second_admin"), bypass=ctx("requested_bypass")).execute()
    return ctx("requested_bypass")


def revoke_requested(ctx):
    RevokeBypass(acting_user=ctx("admin_user"), bypass=ctx("requested_bypass")).execute()
    return ctx("requested_bypass")


def revoke_approved(ctx):
    RevokeBypass(acting_user=ctx("admin_user"), bypass=ctx("approved_bypass")).execute()
    return ctx("approved_bypass")


def use(ctx):
    PublishVersion(acting_user=ctx("publisher"), agent_version=ctx("bad_version")).execute()
    return ctx("approved_bypass")


def expire(ctx):
    bypass = ctx("approved_bypass")
    Bypass.objects.filter(pk=bypass.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    tasks.expire_bypasses()
    return bypass


def supersede(ctx):
    bypass = ctx("approved_bypass")
    RequestPublication(
        acting_user=ctx("author"),
        agent_version=ctx("bad_version"),
        supersede=bypass.publish_request_id,
    ).execute()
    return bypass


@pytest.mark.parametrize(
    "verb,setup,expected",
    [
        (request_bypass, ["four_eyes"], BypassState.REQUESTED),
        (request_bypass, [], BypassState.APPROVED),
        (approve, ["requested_bypass"], BypassState.APPROVED),
        (deny, ["requested_bypass"], BypassState.DENIED),
        (revoke_requested, ["requested_bypass"], BypassState.REVOKED),
        (revoke_approved, ["approved_bypass"], BypassState.REVOKED),
        (use, ["approved_bypass"], BypassState.USED),
        (expire, ["approved_bypass"], BypassState.EXPIRED),
        (supersede, ["approved_bypass"], BypassState.REVOKED),
    ],
    ids=lambda value: getattr(value, "__name__", None) if callable(value) else None,
)
def test_every_bypass_transition_is_written_by_move_bypass(
    verb, setup, expected, request, blocked_request, second_admin, publisher, author
):
    for name in setup:
        request.getfixturevalue(name)
    writes = request.getfixturevalue("state_writes")
    bypass = verb(request.getfixturevalue)
    bypass.refresh_from_db()
    assert bypass.state == expected
    # A bypass is born `requested`; every later state is a move made by move_bypass.
    assert all(state == BypassState.REQUESTED for state, how, _ in writes if how == "create")
    moves = [(state, how, by_move) for state, how, by_move in writes if how != "create"]
    assert all(by_move for *_, by_move in moves), writes
    if expected != BypassState.REQUESTED:
        assert moves[-1] == (expected, "update", True)


@pytest.mark.parametrize(
    "from_state,to_state", list(product(BypassState.values, BypassState.values))
)
def test_a_bypass_moves_only_along_the_declared_transitions(from_state, to_state, approved_bypass):
    Bypass.objects.filter(pk=approved_bypass.pk).update(state=from_state)
    approved_bypass.refresh_from_db()
    if to_state in BYPASS_TRANSITIONS.get(from_state, ()):
        assert move_bypass(approved_bypass, to_state)
        expected = to_state
    else:
        with pytest.raises(ValueError):
            move_bypass(approved_bypass, to_state)
        expected = from_state
    approved_bypass.refresh_from_db()
    assert approved_bypass.state == expected


def test_a_bypass_moved_by_someone_else_is_not_moved_again(approved_bypass):
    stale = Bypass.objects.get(pk=approved_bypass.pk)
    assert move_bypass(approved_bypass, BypassState.REVOKED)
    assert not move_bypass(stale, BypassState.USED)  # it read `approved`; it is not now
    stale.refresh_from_db()
    assert stale.state == BypassState.REVOKED
