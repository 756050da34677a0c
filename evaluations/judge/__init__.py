"""Sherlock's judge: how model-based checks ask a judge model, and how each call is recorded.

The check library codes against `JudgeClient.ask(rubric, variables) -> JudgeAnswer` and gets a
client from `get_default_judge(run=..., trial=..., agent=...)`, which is None when no judge is
configured (model checks are then skipped). See `evaluations.judge.client` for the retry,
repair and cache rules, and `evaluations.judge.recording` for where calls are stored.
"""

from evaluations.judge.cache import CachedAnswer
from evaluations.judge.client import (
    DEFAULT_SEED,
    JudgeAnswer,
    JudgeClient,
    get_default_judge,
    openai_client,
    reset_default_judges,
)
from evaluations.judge.recording import JudgeContext, MemoryRecorder, lookup_cached, record_calls

__all__ = [
    "DEFAULT_SEED",
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
