"""Writing finished trials (evaluations.engine.writer): a trial taken over by another worker
writes nothing of its own, one trial that cannot be written does not sink its batch, and a
trial written again after a failed batch takes new ids. The `Writer` tests run on a thread of
its own against committed data (run on PostgreSQL too: `.ci/run`)."""

from evaluations.actions.start_run import StartRun
from evaluations.engine import Shard, Writer, execute_trial, write_finished
from evaluations.engine import writer as engine_writer
from evaluations.models import CheckResult, CostEntry, Run, Trial
from tests.support import factories

SHAPE = {"label": "Shape", "kind": "output_type", "params": {"type": "text"}}


def test_a_trial_taken_over_by_another_worker_writes_nothing_of_its_own(
    builder, django_capture_on_commit_callbacks
):
    dataset_version = factories.dataset_version(cases=[("c", "q", {})], checks=[SHAPE])
    with django_capture_on_commit_callbacks(execute=False):
        run = StartRun(
            acting_user=builder,
            agent_version=factories.agent_version(),
            dataset_version=dataset_version,
        ).execute()
    trial = run.trials.select_related("case_version__case", "run__agent_version").first()
    finished = execute_trial(Shard.load(trial.run), trial)
    assert finished.attempt == 1
    # Our lease ran out meanwhile and another worker claimed the trial (attempt 2).
    Trial.objects.filter(pk=trial.pk).update(attempts=2)
    assert write_finished([finished]) == 0
    assert not CheckResult.objects.filter(trial=trial).exists()
    assert Run.objects.get(pk=run.pk).trials_done == 0


def run_with_a_broken_trial(builder):
    """A run of two trials, executed but not written: `good`, and `broken`, whose check result
    the database refuses (a score outside [0, 1])."""

    version = factories.agent_version()
    dataset_version = factories.dataset_version(
        cases=[("good", "q", {}), ("broken", "q", {})],
        checks=[SHAPE],
    )
    # Nobody runs the shard: we do it by hand.
    run = factories.planned_run(builder, version, dataset_version)
    trials = list(run.trials.select_related("case_version__case", "run__agent_version"))
    shard = Shard.load(trials[0].run)
    broken, good = (execute_trial(shard, t) for t in sorted(trials, key=lambda t: t.case.key))
    broken.results[0].score = 5
    return run, broken, good


def test_one_trial_that_cannot_be_written_does_not_sink_its_batch(live_db, builder):
    run, broken, good = run_with_a_broken_trial(builder)
    writer = Writer(capacity=4)
    writer.put(broken)
    writer.put(good)
    assert writer.close() == 2
    statuses = dict(Trial.objects.filter(run=run).values_list("case__key", "status"))
    # The database refuses the broken trial's values (a score out of its range): the same
    # values would fail on every retry, so it ends as an error with why, at once.
    assert statuses == {"good": "completed", "broken": "error"}
    error = Trial.objects.get(run=run, case__key="broken").error
    assert error.startswith("the trial's results could not be stored:")
    assert "checkresult_score_in_unit_interval" in error
    assert CheckResult.objects.filter(trial__run=run).count() == 1


def test_a_trial_written_again_after_a_failed_batch_takes_new_ids(live_db, builder, monkeypatch):
    # The failed batch gave the good trial's rows ids, then rolled back. SQLite hands those ids
    # out again: if another worker takes one before the trial is written alone, writing it
    # with its old ids would fail, and a trial that ran fine would wait for the reaper.
    run, broken, good = run_with_a_broken_trial(builder)
    assert good.costs  # the agent's cost line: a row the batch gives an id to
    write_finished = engine_writer.write_finished
    meanwhile = []

    def another_worker_writes_first(batch):
        if len(batch) == 1 and not meanwhile:  # as many rows as the batch gave out, and one
            for _ in range(len(broken.costs) + len(good.costs) + 1):
                meanwhile.append(factories.cost_line(kind="agent", day=run.created_at.date()))
        return write_finished(batch)

    monkeypatch.setattr(engine_writer, "write_finished", another_worker_writes_first)
    writer = Writer(capacity=4)
    writer.put(broken)
    writer.put(good)
    assert writer.close() == 2
    statuses = dict(Trial.objects.filter(run=run).values_list("case__key", "status"))
    assert statuses == {"good": "completed", "broken": "error"}
    stored = CostEntry.objects.filter(trial=good.trial).values_list("pk", flat=True)
    assert sorted(stored) == sorted(cost.pk for cost in good.costs)
    assert not {entry.pk for entry in meanwhile} & set(stored)


def test_a_batch_writes_each_trial_s_values_and_skips_the_one_taken_over(builder):
    # One UPDATE for the batch on PostgreSQL (`.ci/run`), one per trial elsewhere: the same rows.
    version = factories.agent_version()
    dataset_version = factories.dataset_version(
        cases=[("a", "q", {}), ("b", "q", {}), ("c", "q", {})], checks=[SHAPE]
    )
    run = factories.planned_run(builder, version, dataset_version)
    trials = sorted(
        run.trials.select_related("case_version__case", "run__agent_version"),
        key=lambda t: t.case.key,
    )
    shard = Shard.load(trials[0].run)
    finished = [execute_trial(shard, trial) for trial in trials]
    finished[2].fields["error"] = 'it said "no"\n'
    del finished[2].fields["declared_complete"]  # a set of fields of its own: its own UPDATE
    Trial.objects.filter(pk=trials[1].pk).update(attempts=2)  # taken over meanwhile
    assert write_finished(finished) == 2
    rows = {t.case.key: t for t in Trial.objects.filter(run=run).select_related("case")}
    assert [rows[key].status for key in "abc"] == ["completed", "running", "completed"]
    for key, item in zip("ac", (finished[0], finished[2]), strict=True):
        assert rows[key].transcript == item.fields["transcript"]
        assert rows[key].finished_at == item.fields["finished_at"]
        assert rows[key].lease_expires_at is None
        assert rows[key].error == item.fields["error"]
    assert not rows["b"].transcript and rows["b"].finished_at is None
    assert sorted(
        CheckResult.objects.filter(trial__run=run).values_list("trial__case__key", flat=True)
    ) == ["a", "c"]
    assert Run.objects.get(pk=run.pk).trials_done == 2
