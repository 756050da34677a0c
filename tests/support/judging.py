"""A rubric, a question and a good answer for the judge's tests, and a judge on the loopback
server that records to memory (`fast_judge`)."""

from evaluations.checks.rubrics import Rubric
from evaluations.judge import JudgeClient, MemoryRecorder
from tests.support.judge_fixtures import JUDGE_MODEL

RELEVANCE = Rubric(
    id="test.relevance",
    version=3,
    system="You grade answers. Reply with JSON.",
    template="Question: {question}\nAnswer: {answer}\nDoes the answer address the question?",
    schema={
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "reason": {"type": "string"},
            "score": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["reason", "score"],
    },
)
VARIABLES = {"question": "Where is the Eiffel Tower?", "answer": "In Paris."}
GOOD = {"reason": "It answers where.", "score": 1}


def fast_judge(server, **kwargs):
    """A judge on the loopback server that never records to the database."""
    options = {
        "base_url": server.url,
        "model": JUDGE_MODEL,
        "timeout": 1,
        "max_retries": 2,
        "base_backoff": 0.01,
        "max_backoff": 0.05,
        "recorder": MemoryRecorder(),
        "cache_lookup": None,
    }
    options.update(kwargs)
    return JudgeClient(**options)


def ask_on_a_loop(judge, rubric, variables, **options):
    """`judge.aask(...)` awaited on an event loop, as the run engine's shards ask, from this
    synchronous test: asgiref's `async_to_sync` runs the loop on a thread of its own, and the
    database work of the judge's recorder and stored-cache look-up (`sync_to_async`) comes
    back to this thread, inside the test's transaction. The loop's SDK client is closed with it.
    """
    from asgiref.sync import async_to_sync

    from sherlock.core.aio import aclose_loop_clients

    async def ask():
        try:
            return await judge.aask(rubric, variables, **options)
        finally:
            await aclose_loop_clients()

    return async_to_sync(ask)()


def ask_blocking(judge, rubric, variables, **options):
    """`judge.ask(...)`, the blocking path (admin previews, `check_judge`, the tests' sync mode)."""
    return judge.ask(rubric, variables, **options)
