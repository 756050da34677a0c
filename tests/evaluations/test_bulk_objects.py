"""`sherlock.core.bulk.insert_objects`, the engine writer's insert: unsaved instances go in with
their primary keys set (COPY with keys drawn from the sequence on PostgreSQL, `bulk_create`
elsewhere), foreign keys taken from related instances saved meanwhile, `auto_now_add` stamped
(run on PostgreSQL too: `.ci/run`)."""

import datetime
from decimal import Decimal

from evaluations.models import CostEntry, JudgeCall
from sherlock.core.bulk import insert_objects


def judge_call(n, **fields):
    return JudgeCall(
        model="judge",
        rubric_id="custom",
        prompt_hash=f"{n:064}",
        cache_key=f"{n:064}",
        request={"messages": [{"role": "user", "content": f'say "{n}"\n\\ it'}]},
        **fields,
    )


def test_inserted_objects_get_their_keys_and_their_related_keys(db):
    before = JudgeCall.objects.create(model="judge", rubric_id="x", prompt_hash="0", cache_key="0")
    calls = [judge_call(1, response={"score": 1}), judge_call(2, usd=Decimal("0.00012345"))]
    insert_objects(JudgeCall, calls)
    assert all(call.pk and call.pk > before.pk for call in calls)
    assert len({call.pk for call in calls}) == 2
    assert not any(call._state.adding for call in calls)
    lines = [
        CostEntry(kind="scoring", day=datetime.date(2026, 12, 1), model="judge", judge_call=call)
        for call in calls
    ]  # made while the calls had no keys yet, as the engine makes them
    insert_objects(CostEntry, lines)
    stored = {
        row.pk: row for row in JudgeCall.objects.filter(pk__in=[c.pk for c in calls]).order_by()
    }
    first, second = stored[calls[0].pk], stored[calls[1].pk]
    assert first.request == calls[0].request  # JSON with quotes, newlines, backslashes intact
    assert first.response == {"score": 1} and second.response is None
    assert second.usd == Decimal("0.00012345") and first.usd is None
    assert first.created_at is not None and first.created_at == calls[0].created_at
    assert dict(CostEntry.objects.values_list("pk", "judge_call_id")) == {
        line.pk: call.pk for line, call in zip(lines, calls, strict=True)
    }
    assert CostEntry.objects.get(pk=lines[0].pk).at is not None


def test_inserting_nothing_sends_nothing(db, django_assert_num_queries):
    with django_assert_num_queries(0):
        insert_objects(JudgeCall, [])
