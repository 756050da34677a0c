"""Claims in batches (an async shard's `Claims`): one UPDATE for many trials, each guarded by its
status and attempt as a single claim is, a take that never hands out a trial twice, and claims
taken ahead of the slots that ask."""

import asyncio

from evaluations.engine.database import Database
from evaluations.engine.shards import Claims, Work
from evaluations.engine.trials import claim_trial, claim_trials
from evaluations.models import Trial
from tests.support import factories


def planned(builder, cases):
    version = factories.agent_version()
    dataset_version = factories.dataset_version(
        cases=[(f"c{i}", "q", {}) for i in range(cases)],
        checks=[{"label": "Shape", "kind": "output_type", "params": {"type": "text"}}],
    )
    run = factories.planned_run(builder, version, dataset_version)
    return run, list(Trial.objects.filter(run=run).order_by("pk"))


def test_a_batch_claim_takes_each_pending_trial_with_its_next_attempt(
    builder, django_assert_num_queries
):
    run, trials = planned(builder, 4)
    Trial.objects.filter(pk=trials[1].pk).update(attempts=1)  # handed back once by the reaper
    trials[1].attempts = 1
    with django_assert_num_queries(2):  # the UPDATE, and reading back what it claimed
        claimed = claim_trials(trials)
    assert [(trial.pk, attempt) for trial, attempt in claimed] == [
        (trials[0].pk, 1),
        (trials[1].pk, 2),
        (trials[2].pk, 1),
        (trials[3].pk, 1),
    ]
    rows = Trial.objects.filter(run=run).order_by("pk")
    assert [(t.status, t.attempts) for t in rows] == [
        ("running", 1),
        ("running", 2),
        ("running", 1),
        ("running", 1),
    ]
    assert all(t.lease_expires_at and t.worker == trials[0].worker for t in rows)
    assert trials[1].status == "running" and trials[1].attempts == 2  # the instance says so


def test_a_batch_claim_skips_what_another_worker_claimed_since_it_was_loaded(builder):
    run, trials = planned(builder, 3)
    stale = list(Trial.objects.filter(run=run).order_by("pk"))
    assert claim_trial(trials[1]) == 1  # another worker's claim, after ours loaded the rows
    claimed = claim_trials(stale)
    assert [trial.pk for trial, _ in claimed] == [trials[0].pk, trials[2].pk]
    assert stale[1].status == "pending"  # nothing was written on the instance it did not get
    assert claim_trials(stale[1:2]) == []  # and asking again changes nothing
    assert Trial.objects.get(pk=trials[1].pk).attempts == 1


def test_a_take_hands_out_every_trial_once_its_own_first_then_the_others(builder):
    run, trials = planned(builder, 6)
    work = Work(run, trials[:2])
    # Its own two, and not the run's other pending ones in the same take: those two are still
    # pending until claimed, and helping would find them again.
    first = work.take(5)
    assert [t.pk for t in first] == [trials[0].pk, trials[1].pk]
    claim_trials(first)
    helped = work.take(5)  # the run's other pending trials, the highest first
    assert [t.pk for t in helped] == [t.pk for t in reversed(trials[2:])]
    claim_trials(helped)
    assert work.take(5) == []


def test_claims_are_taken_a_quarter_of_the_slots_ahead_and_handed_out_before_claiming_again(
    live_db, builder
):
    # On the engine's database threads, as a shard claims: a quarter of 8 slots is 2 at a time,
    # though only one slot asks.
    run, trials = planned(builder, 5)
    db = Database(1)

    async def take(n):
        claims = Claims(Work(run, trials), db, slots=8)
        taken = []
        for _ in range(n):
            taken.append(await claims.next())
            held = Trial.objects.filter(run=run, status="running").count
            taken[-1] = (taken[-1][0].pk, taken[-1][1], await db.run(held))
        return taken

    try:
        taken = asyncio.run(take(3))
    finally:
        db.close()
    # The first ask claims two; the second is served from them; the third claims two more.
    assert taken == [(trials[0].pk, 1, 2), (trials[1].pk, 1, 2), (trials[2].pk, 1, 4)]
