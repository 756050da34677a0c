"""The engine's threads against committed data: the agent calls and the judge calls of different
trials are in flight at the same time, and finishing a run happens once however many workers
try at the same moment (run on PostgreSQL too: `.ci/run`)."""

import threading

from django.db import connection

from agents.models import AgentVersion
from evaluations.actions.start_run import StartRun
from evaluations.engine import maybe_finish_run
from evaluations.models import CaseResult, CheckResult, JudgeCall, Run
from evaluations.signals import run_finished
from tests.support import factories
from tests.support.llm_server import Fault

CONCURRENCY = 4


def custom(label, criterion):
    return {
        "label": label,
        "kind": "custom",
        "threshold": 0.5,
        "params": {"criterion": criterion, "anchors": "0 = no, 1 = yes"},
    }


class AllAtOnce:
    """Answers the loopback server's requests, but holds the first CONCURRENCY agent requests
    (and, separately, the first CONCURRENCY judge requests) until they are all in flight: if
    the engine made them one after another, the barrier would time out and the answer would be
    a 500, so every check would end in `error`."""

    def __init__(self):
        self.met = set()
        self.barriers = {
            kind: threading.Barrier(CONCURRENCY, action=lambda k=kind: self.met.add(k), timeout=5)
            for kind in ("agent", "judge")
        }

    def __call__(self, request):
        kind = "judge" if request.get("response_format") else "agent"
        if kind not in self.met:
            try:
                self.barriers[kind].wait()
            except threading.BrokenBarrierError:
                return Fault(status=500, message=f"the {kind} calls did not overlap")
        if kind == "agent":
            return "You said hi"
        return {"quotes": ["You said hi"], "reason": "It does.", "score": 1}


def test_agent_and_judge_calls_of_different_trials_overlap(
    live_db, judge_settings, llm_server, builder
):
    judge_settings.SHERLOCK_RUN_CONCURRENCY = CONCURRENCY
    llm_server.responder = responder = AllAtOnce()
    version = AgentVersion.objects.create(
        agent=factories.agent(),
        number=1,
        adapter="openai_chat",
        config={"base_url": llm_server.url, "model": "agent-model", "max_retries": 0},
    )
    dataset_version = factories.dataset_version(
        cases=[(f"case-{i}", f"question {i}", {}) for i in range(8)],
        checks=[custom("Polite", "It is polite."), custom("Brief", "It is brief.")],
    )
    run = StartRun(  # commits; django-q2's sync mode runs the shard here, on threads
        acting_user=builder, agent_version=version, dataset_version=dataset_version
    ).execute()
    run.refresh_from_db()
    assert responder.met == {"agent", "judge"}
    assert run.status == "completed" and run.trials_error == 0
    statuses = set(CheckResult.objects.filter(trial__run=run).values_list("status", flat=True))
    assert statuses == {"passed"}
    assert llm_server.request_count == 8 + 16
    assert JudgeCall.objects.filter(run=run).count() == 16
    assert len(set(run.trials.values_list("worker", flat=True))) == 1  # one process, threads


def test_finishing_happens_once_when_workers_race_for_it(live_db, builder):
    version = factories.agent_version()
    dataset_version = factories.dataset_version(
        cases=[(f"c{i}", "q", {}) for i in range(5)],
        checks=[{"label": "Shape", "kind": "output_type", "params": {"type": "text"}}],
    )

    # Keep the shard out of it: we play the last workers ourselves.
    run = factories.planned_run(builder, version, dataset_version)
    run.trials.update(status="completed")
    Run.objects.filter(pk=run.pk).update(status="running", trials_done=5)

    received, results = [], []
    start = threading.Barrier(8, timeout=10)

    def listener(sender, run_id, status, **kwargs):
        received.append((run_id, status))

    def last_worker():
        try:
            start.wait()
            results.append(maybe_finish_run(run.pk))
        finally:
            connection.close()

    run_finished.connect(listener)
    try:
        threads = [threading.Thread(target=last_worker) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        run_finished.disconnect(listener)
    assert sorted(results) == [False] * 7 + [True]
    assert received == [(run.pk, "completed")]
    assert CaseResult.objects.filter(run=run).count() == 5
    run.refresh_from_db()
    assert run.status == "completed" and run.summary["cases"] == 5
