"""`sherlock.bulk.insert` stores exactly what `bulk_create` stores, sets the same state on the
objects, batches like it, and hands over to it where it cannot do the work itself."""

import datetime
from decimal import Decimal

import pytest
from django.db import connection
from django.db.models import QuerySet
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from evaluations.choices import CheckStatus, CostKind
from evaluations.models import CheckResult, CostEntry, JudgeCall, Run, Trial
from sherlock.bulk import insert
from tests.support import factories

pytestmark = pytest.mark.django_db

SHAPE = {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}
NESTED = {
    "messages": [{"role": "user", "content": 'Grüße, 日本語 ✓ "quoted" \\ and\nnewline'}],
    "params": {"temperature": 0.0, "n": 1, "stop": None, "flags": [True, False, 2.5]},
}


@pytest.fixture
def fallbacks(monkeypatch):
    """The models `bulk_create` is called for (`insert` must not hand its work over to it)."""
    models, original = [], QuerySet.bulk_create

    def spy(self, objs, *args, **kwargs):
        models.append(self.model)
        return original(self, objs, *args, **kwargs)

    monkeypatch.setattr(QuerySet, "bulk_create", spy)
    return models


@pytest.fixture
def trial():
    version = factories.dataset_version(
        cases=[("c1", "q", {})], checks=[SHAPE, SHAPE | {"label": "B"}]
    )
    run = Run.objects.create(agent_version=factories.agent_version(), dataset_version=version)
    case_version = version.case_versions.get()
    return Trial.objects.create(
        run=run, case=case_version.case, case_version=case_version, repetition=1
    )


def judge_calls(trial):
    """Fresh, unsaved calls covering every kind of value (a new list on each call)."""
    return [
        JudgeCall(
            model="judge-a", rubric_id="r1", prompt_hash="h0", cache_key="k0", request=NESTED,
            response={"choices": [{"message": {"content": "¿sí? 🙂"}}], "usage": {}},
            usd=Decimal("0.00012345"), latency_ms=12.5, prompt_tokens=10, run=trial.run,
            trial=trial,
        ),
        JudgeCall(
            model="judge-a", rubric_id="r1", rubric_version=3, prompt_hash="h1", cache_key="k1",
            status=JudgeCall.Status.ERROR, error="timeout — retried", attempt=2, response=None,
            usd=None, latency_ms=7, run_id=trial.run_id, trial_id=trial.pk,
        ),
        JudgeCall(
            model="judge-b", rubric_id="r2", prompt_hash="h2", cache_key="k2", cached=True,
            request={}, raw_answer="PASS", completion_tokens=5, usd=Decimal("1.5"),
        ),
    ]  # fmt: skip


def stored_rows(model, pks, skip=("id", "created_at", "at")):
    """The rows as the database holds them, without the ids and insertion times."""
    columns = [f.column for f in model._meta.concrete_fields if f.column not in skip]
    qn = connection.ops.quote_name
    sql = (
        f"SELECT {', '.join(map(qn, columns))} FROM {qn(model._meta.db_table)} "
        f"WHERE id IN ({', '.join(['%s'] * len(pks))}) ORDER BY id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, list(pks))
        return cursor.fetchall()


def orm_rows(model, pks, skip=("id", "created_at")):
    """The rows as the ORM reads them back, in id order."""
    rows = model.objects.filter(pk__in=pks).order_by("pk").values()
    return [{k: v for k, v in row.items() if k not in skip} for row in rows]


def test_judge_calls_get_ids_and_the_same_rows_as_bulk_create(trial, fallbacks):
    calls = judge_calls(trial)
    assert insert(calls) is calls and fallbacks == []
    pks = [call.pk for call in calls]
    assert None not in pks and pks == sorted(set(pks))
    assert all(not c._state.adding and c._state.db == "default" for c in calls)
    ours = orm_rows(JudgeCall, pks)
    assert [row["prompt_hash"] for row in ours] == ["h0", "h1", "h2"]  # each id is its own row
    assert ours[0]["request"] == NESTED and ours[1]["response"] is None
    assert ours[0]["usd"] == Decimal("0.00012345") and ours[1]["usd"] is None
    assert ours[1]["status"] == "error" and ours[1]["latency_ms"] == 7.0
    assert ours[1]["trial_id"] == trial.pk and ours[2]["run_id"] is None

    theirs = [c.pk for c in JudgeCall.objects.bulk_create(judge_calls(trial))]
    assert stored_rows(JudgeCall, pks) == stored_rows(JudgeCall, theirs)
    assert ours == orm_rows(JudgeCall, theirs)


def test_created_at_is_set_on_the_objects_and_stored(trial, fallbacks):
    before = timezone.now()
    calls = insert(judge_calls(trial))
    after = timezone.now()
    assert fallbacks == []
    for call in calls:
        assert before <= call.created_at <= after
        assert JudgeCall.objects.get(pk=call.pk).created_at == call.created_at


def test_a_related_object_saved_since_assignment_gives_its_id(trial, fallbacks):
    call, reference_call = JudgeCall(model="m", request={}), JudgeCall(model="m", request={})
    line = {"kind": CostKind.SCORING, "day": datetime.date(2024, 2, 29), "trial": trial}
    entry = CostEntry(judge_call=call, usd=Decimal("0.5"), **line)
    reference = CostEntry(judge_call=reference_call, usd=Decimal("0.5"), **line)
    insert([call])
    insert([entry])
    assert fallbacks == []
    JudgeCall.objects.bulk_create([reference_call])
    CostEntry.objects.bulk_create([reference])
    assert entry.judge_call_id == call.pk and entry.pk is not None
    assert CostEntry.objects.get(pk=entry.pk).judge_call_id == call.pk
    assert CostEntry.objects.get(pk=entry.pk).at == entry.at is not None
    skip = ("id", "at", "judge_call_id")  # the two entries name a call of their own
    assert stored_rows(CostEntry, [entry.pk], skip) == stored_rows(CostEntry, [reference.pk], skip)


def test_an_unsaved_related_object_is_refused_like_bulk_create(trial, fallbacks):
    def entry():
        return CostEntry(kind=CostKind.SCORING, day=datetime.date.today(), judge_call=JudgeCall())

    with pytest.raises(ValueError) as expected:
        CostEntry.objects.bulk_create([entry()])
    with pytest.raises(ValueError) as raised:
        insert([entry()])
    assert fallbacks == [CostEntry]  # the reference call only
    assert str(raised.value) == str(expected.value)
    assert "unsaved related object 'judge_call'" in str(raised.value)
    assert not CostEntry.objects.exists()


def test_more_rows_than_one_statement_holds_go_in_batches(trial, monkeypatch, fallbacks):
    monkeypatch.setattr(connection.ops, "bulk_batch_size", lambda fields, objs: 2)
    calls = [JudgeCall(model="m", prompt_hash=f"h{i}", request={"i": i}) for i in range(5)]
    with CaptureQueriesContext(connection) as queries:
        insert(calls)
    inserts = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("INSERT")]
    assert len(inserts) == 3 and len(queries.captured_queries) == 3 and fallbacks == []
    pks = [call.pk for call in calls]
    assert None not in pks and pks == sorted(set(pks))
    stored = dict(JudgeCall.objects.values_list("pk", "prompt_hash"))
    assert [stored[pk] for pk in pks] == [f"h{i}" for i in range(5)]


def test_objects_with_a_primary_key_go_through_bulk_create(trial, fallbacks):
    calls = [
        JudgeCall(pk=987_654, model="m", prompt_hash="a"),
        JudgeCall(model="m", prompt_hash="b"),
    ]
    insert(calls)
    assert fallbacks == [JudgeCall]
    assert calls[1].pk is not None and calls[1].pk != 987_654
    stored = dict(JudgeCall.objects.values_list("prompt_hash", "pk"))
    assert stored == {"a": 987_654, "b": calls[1].pk}


def test_an_empty_list_runs_no_query(django_assert_num_queries):
    with django_assert_num_queries(0):
        assert insert([]) == []


def test_check_results_round_trip(trial, fallbacks):
    calls = insert(judge_calls(trial))
    checks = list(trial.run.dataset_version.checks.order_by("position"))
    evidence = {"observed": "Grüße 日本語", "matches": [{"span": [0, 5], "ok": True}], "x": None}
    results = [
        CheckResult(
            trial=trial, check_config=checks[0], score=0.75, status=CheckStatus.PASSED,
            threshold=0.5, reason="ok ✓", evidence=evidence, judge_call_ids=[c.pk for c in calls],
        ),
        CheckResult(
            trial=trial, check_config=checks[1], score=None, status=CheckStatus.SKIPPED,
            blocking=False,
        ),
    ]  # fmt: skip
    insert(results)
    assert fallbacks == []
    assert all(r.pk is not None and r.created_at is not None for r in results)
    first, second = orm_rows(CheckResult, [r.pk for r in results])
    assert first == {
        "trial_id": trial.pk, "check_config_id": checks[0].pk, "score": 0.75, "status": "passed",
        "blocking": True, "threshold": 0.5, "reason": "ok ✓", "evidence": evidence,
        "judge_call_ids": [c.pk for c in calls],
    }  # fmt: skip
    assert (second["score"], second["status"], second["evidence"], second["judge_call_ids"]) == (
        None, "skipped", {}, [],
    )  # fmt: skip
    assert CheckResult.objects.get(pk=results[0].pk).created_at == results[0].created_at
