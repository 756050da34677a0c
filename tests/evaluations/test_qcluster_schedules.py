"""A real `qcluster` fires a schedule: its django-q2 row is due (next run in the past), the
cluster's scheduler (about every 30 s) calls `evaluations.tasks.run_schedule`, and the run it
starts is executed to the end by the same cluster."""

from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.models import Schedule

from evaluations.actions.create_schedule import CreateSchedule
from evaluations.models import Run, RunSchedule
from tests.support import factories, workers
from tests.support.workers import start_cluster, stop_cluster, wait_for

pytestmark = pytest.mark.slow
broker_mode = workers.broker_mode


def test_a_real_cluster_fires_a_due_schedule(live_db, broker_mode, tmp_path):
    builder = factories.user("builder", role="Builder")
    agent = factories.agent()
    agent.live_version = factories.agent_version(agent)
    agent.save(update_fields=["live_version"])
    dataset_version = factories.dataset_version(
        cases=[(f"case-{i}", f"question {i}", {}) for i in range(3)],
        checks=[
            {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}
        ],
    )
    schedule = CreateSchedule(
        acting_user=builder, agent=agent, dataset=dataset_version.dataset, interval_minutes=1
    ).execute()
    Schedule.objects.filter(pk=schedule.q_schedule_id).update(
        next_run=timezone.now() - timedelta(minutes=1)
    )
    cluster = start_cluster(tmp_path / "qcluster.log")
    try:
        finished = wait_for(
            lambda: Run.objects.filter(schedule=schedule, status="completed").exists(),
            timeout=120,
        )
    finally:
        stop_cluster(cluster)
    log = (tmp_path / "qcluster.log").read_text(errors="replace")
    assert finished, log[-4000:]
    run = Run.objects.get(schedule=schedule)
    assert (run.purpose, run.requested_by, run.dataset_version) == (
        "scheduled",
        builder,
        dataset_version,
    )
    assert run.trials_done == 3
    schedule = RunSchedule.objects.get(pk=schedule.pk)
    assert schedule.last_run == run and schedule.last_error == ""
    assert schedule.next_run > timezone.now() - timedelta(seconds=60)
