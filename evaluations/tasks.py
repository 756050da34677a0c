"""django-q2 tasks: thin, idempotent, and taking ids only."""

from evaluations import engine
from evaluations.actions.fire_schedule import fire


def run_shard(run_id, trial_ids):
    """Execute the unfinished trials of one shard; finished ones are skipped."""
    return engine.run_shard(run_id, trial_ids)


def reap_expired_leases():
    """Periodic (the `sherlock-reaper` schedule): hand back what dead workers left behind."""
    return engine.reap()


def run_schedule(schedule_id):
    """Fired by a `RunSchedule`'s django-q2 row: start its run
    (`evaluations.actions.fire_schedule.fire`)."""

    return fire(schedule_id)
