"""Cancelling a run: pending trials are cancelled, running ones finish, nothing new starts, the
run ends `cancelled` and `run_finished` is sent once; only a Builder of the agent or an Admin may
do it, and a run that already ended cannot be cancelled."""

import pytest

from evaluations.actions.cancel_run import CancelRun
from evaluations.actions.start_run import StartRun
from evaluations.engine import run_shard
from evaluations.models import CaseResult, Run, Trial
from evaluations.signals import run_finished
from governance.models import AuditEntry
from sherlock.core.errors import ActionConflict, ActionDenied
from tests.support import factories

SHAPE = {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}
during_call = {}


def agent_that_gets_cancelled(case, **_):
    """Someone cancels the run while this agent answers its first case."""
    if case["id"] == "a-first":
        during_call["cancel"]()
    return {"output": "ok", "tool_calls": []}


@pytest.fixture
def finished_signals():
    received = []

    def listener(sender, run_id, status, **kwargs):
        received.append((run_id, status))

    run_finished.connect(listener)
    yield received
    run_finished.disconnect(listener)


def start(builder, capture, execute=True):
    version = factories.agent_version(
        callable_path="tests.evaluations.test_cancel_run.agent_that_gets_cancelled"
    )
    dataset_version = factories.dataset_version(
        cases=[(key, "q", {}) for key in ("a-first", "b-second", "c-third")], checks=[SHAPE]
    )
    with capture(execute=execute):
        run = StartRun(
            acting_user=builder, agent_version=version, dataset_version=dataset_version
        ).execute()
    run.refresh_from_db()
    return run


def statuses(run):
    return dict(Trial.objects.filter(run=run).values_list("case__key", "status"))


def test_a_running_trial_finishes_but_no_new_one_starts(
    builder, django_capture_on_commit_callbacks, finished_signals
):
    def cancel():
        run = Run.objects.select_related("agent_version__agent").get()
        CancelRun(acting_user=builder, run=run).execute()

    during_call["cancel"] = cancel
    run = start(builder, django_capture_on_commit_callbacks)
    assert statuses(run) == {
        "a-first": "completed",
        "b-second": "cancelled",
        "c-third": "cancelled",
    }
    assert run.status == "cancelled" and run.finalized_at is not None
    assert run.trials_done == 1 and run.summary["trials_cancelled"] == 2
    # Cancelled trials are no repetitions: only the case that ran has a result.
    assert list(CaseResult.objects.filter(run=run).values_list("case__key", flat=True)) == [
        "a-first"
    ]
    assert finished_signals == [(run.pk, "cancelled")]
    entry = AuditEntry.objects.get(action="evaluations.run.cancel")
    assert entry.before == {"status": "running"}
    assert entry.after["trials_cancelled"] == 2 and entry.after["trials_still_running"] == 1


def test_cancelling_a_queued_run_finishes_it_at_once_and_its_shard_runs_nothing(
    builder, django_capture_on_commit_callbacks, finished_signals
):
    run = start(builder, django_capture_on_commit_callbacks, execute=False)  # not enqueued
    with django_capture_on_commit_callbacks(execute=True):
        CancelRun(acting_user=builder, run=run).execute()
    run.refresh_from_db()
    assert run.status == "cancelled" and set(statuses(run).values()) == {"cancelled"}
    assert finished_signals == [(run.pk, "cancelled")]
    # The shard task arrives late: nothing runs, nothing is finished twice.
    with django_capture_on_commit_callbacks(execute=True):
        assert run_shard(run.pk, list(run.trials.values_list("pk", flat=True))) == 0
    assert finished_signals == [(run.pk, "cancelled")]


def test_admin_can_cancel_a_run(admin_user, builder, django_capture_on_commit_callbacks):
    run = start(builder, django_capture_on_commit_callbacks, execute=False)
    CancelRun(acting_user=admin_user, run=run).execute()
    assert Run.objects.get(pk=run.pk).status == "cancelled"


def test_publisher_cannot_cancel_a_run(publisher, builder, django_capture_on_commit_callbacks):
    run = start(builder, django_capture_on_commit_callbacks, execute=False)
    with pytest.raises(ActionDenied):
        CancelRun(acting_user=publisher, run=run).execute()
    assert Run.objects.get(pk=run.pk).status == "queued"
    assert not AuditEntry.objects.filter(action="evaluations.run.cancel").exists()


def test_a_finished_run_cannot_be_cancelled(builder, django_capture_on_commit_callbacks):
    during_call["cancel"] = lambda: None
    run = start(builder, django_capture_on_commit_callbacks)
    assert run.status == "completed"
    with pytest.raises(ActionConflict, match="already completed"):
        CancelRun(acting_user=builder, run=run).execute()


def test_cancel_is_a_compare_and_set(builder, django_capture_on_commit_callbacks):
    """A run that finished after it was loaded is not cancelled by a stale copy."""
    run = start(builder, django_capture_on_commit_callbacks, execute=False)
    Run.objects.filter(pk=run.pk).update(status="completed")  # behind the loaded copy's back
    with pytest.raises(ActionConflict, match="already completed"):
        CancelRun(acting_user=builder, run=run).execute()
    assert Run.objects.get(pk=run.pk).status == "completed"
    assert set(statuses(run).values()) == {"pending"}
