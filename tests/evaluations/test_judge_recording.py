"""The stored-call look-up behind the judge's cache (evaluations/judge/recording.py
`lookup_cached`): one ORM query, through Django's cursor and its transaction rules."""

import pytest
from django.db import connection, transaction
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from evaluations.judge import lookup_cached
from tests.support.judging import GOOD, RELEVANCE, VARIABLES


@pytest.mark.django_db
def test_the_cache_lookup_is_one_query_for_the_newest_good_call(judge, llm_server):
    llm_server.script([GOOD])
    stored = judge.ask(RELEVANCE, VARIABLES)

    with CaptureQueriesContext(connection) as queries:
        found = lookup_cached(stored.cache_key)
    assert (found.raw, found.source_call_id) == (stored.raw, stored.calls[0].pk)
    assert len(queries) == 1 and "cache_key" in queries[0]["sql"]

    assert lookup_cached(stored.cache_key).source_call_id == stored.calls[0].pk
    assert lookup_cached("0" * 64) is None


@pytest.mark.django_db
def test_the_lookup_refuses_a_transaction_marked_for_rollback():
    # Django's cursor rule: after an error inside atomic(), no further statement.
    with transaction.atomic():
        transaction.set_rollback(True)
        with pytest.raises(TransactionManagementError):
            lookup_cached("0" * 64)
