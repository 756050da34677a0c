"""Sherlock's judge: how model-based checks ask a judge model, and how each call is recorded.

The check library codes against `JudgeClient.ask(rubric, variables) -> JudgeAnswer` (blocking)
and `await JudgeClient.aask(...)` (on the engine's event loop), and gets a client from
`get_default_judge(run=..., trial=..., agent=...)`, None when no judge is configured (model
checks are then skipped). The modules:

- `client`: `JudgeClient` (binding, the flow of one ask as coroutines) and `get_default_judge`;
- `transport`: the flow's I/O, blocking (`ask`: never suspends) or on the loop (`aask`);
- `sdk`: one OpenAI SDK client per process, base URL and key (one `AsyncOpenAI` per loop),
  the request, and the parameter the completion cap travels as;
- `retry`: which failures are asked again, the backoff, `Retry-After`, the worst-case wait;
- `schema`: a rubric's strict JSON schema with its bounds, prepared once;
- `answers`: the question, reading and validating an answer, the re-asks, `JudgeAnswer`;
- `errors`: the error codes of a failed ask;
- `cache`: the cache key, the in-process cache and the order an ask looks in;
- `recording`: the `JudgeCall` rows and the stored-call look-up;
- `probe`: `check_judge`'s one question per rubric family, and the judge's stored status.

Every question is bounded (arrays, free text where the server takes it, a completion cap); a
cut-off answer is asked again fresh and brief, and the cache key names the server.
"""

from evaluations.judge.answers import JudgeAnswer
from evaluations.judge.cache import CachedAnswer
from evaluations.judge.client import (
    JudgeClient,
    get_default_judge,
    reset_default_judges,
)
from evaluations.judge.recording import JudgeContext, MemoryRecorder, lookup_cached, record_calls
from evaluations.judge.sdk import openai_client

__all__ = [
    "CachedAnswer",
    "JudgeAnswer",
    "JudgeClient",
    "JudgeContext",
    "MemoryRecorder",
    "get_default_judge",
    "lookup_cached",
    "openai_client",
    "record_calls",
    "reset_default_judges",
]
