"""The judge client: one way for every model-based check to ask a judge model.

`JudgeClient.ask(rubric, variables) -> JudgeAnswer` is the whole interface, and
`await JudgeClient.aask(...)` the same on an event loop (the engine's shards: hundreds of
questions in flight as coroutines). This module holds the flow of one ask, written once as
coroutines over a transport (`transport.py`: blocking for `ask`, the loop's for `aask`); the
parts beside it:

- `sdk.py`: one OpenAI SDK client per process and base URL (one `AsyncOpenAI` per loop), with
  the SDK's own retries off; `retry.py`: ours instead, honouring `Retry-After`, every attempt
  recorded as a `JudgeCall` row.
- `schema.py`, `answers.py`: every answer a structured output against the rubric's strict JSON
  schema, bounded, validated on arrival; a cut-off or malformed answer is asked again once,
  then is an error keeping the raw answer. A judge failure is never a score: the check's
  status is `error`, never `failed` or `passed`.
- `cache.py`: repeated questions answered from a cache, the hit still recorded (`cached`), and
  identical questions in flight at once make one request; within a trial a failed question is
  not asked again (`reused`).
- `recording.py`: where the calls go (the database by default, with their cost entries).

The judge for a person (bounds a server refuses, caps, a local model): docs/checks.md, "The
judge", and docs/judges.md.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import openai
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from evaluations.judge.answers import (
    JudgeAnswer,
    Question,
    brevity_request,
    build_question,
    read_answer,
    repair_request,
)
from evaluations.judge.cache import AnswerCache, CachedAnswer
from evaluations.judge.errors import CUT_OFF, HTTP_ERROR, MALFORMED, Failure
from evaluations.judge.recording import (
    AsyncCacheLookup,
    AsyncRecorder,
    CacheLookup,
    JudgeContext,
    Recorder,
    lookup_cached,
    new_call,
    record_calls,
)
from evaluations.judge.retry import (
    DEFAULT_BASE_BACKOFF,
    DEFAULT_MAX_RETRY_AFTER,
    AttemptFailure,
    RetryPolicy,
)
from evaluations.judge.schema import MAX_ITEMS, MAX_LENGTH, server_bounds
from evaluations.judge.sdk import cap_parameter as cap_parameter_for
from evaluations.judge.sdk import openai_client
from evaluations.judge.transport import BLOCKING, ON_LOOP
from sherlock.core.aio import run_unsuspended
from sherlock.core.numbers import TOKENS

if TYPE_CHECKING:
    from evaluations.checks.rubrics import Rubric
    from evaluations.models import JudgeCall

__all__ = [
    "JudgeClient",
    "get_default_judge",
    "reset_default_judges",
]

log = logging.getLogger("sherlock.judge")


@dataclass
class _Core:
    """The shared, thread-safe part of a judge: configuration, retry policy, cache, recorder."""

    base_url: str
    api_key: str
    model: str
    retry: RetryPolicy
    temperature: float
    seed: int | None
    recorder: Recorder | None
    cache_lookup: CacheLookup | None
    cache: AnswerCache
    max_tokens: int = 0  # 0: sized from each question's bounded schema
    cap_parameter: str = "max_tokens"
    bounds: frozenset = frozenset()  # the bound keywords this server is sent
    # The keywords the server refused (a 400 naming one): not sent from then on.
    refused: frozenset = frozenset()
    # The database work of `aask` awaited on the loop (None: the sync one on a thread).
    alookup: AsyncCacheLookup | None = None
    arecorder: AsyncRecorder | None = None

    @property
    def sdk(self) -> openai.OpenAI:
        # Looked up per request (a dict hit) rather than held, so that a judge built before
        # django-q2 forks a worker gets the worker's own pool, never the parent's sockets.
        return openai_client(self.base_url, self.api_key, self.retry.timeout)


class JudgeClient:
    """Asks a judge model to answer a rubric, and records what it cost.

    Build one per configuration (usually through `get_default_judge`) and share it: it is
    thread-safe, and `bind` returns a light view carrying the run, trial and agent its calls
    are recorded against, sharing the SDK client, cache and recorder. Arguments left as None
    come from the `SHERLOCK_JUDGE_*` settings (docs/guide.md, "Configuration");
    `recorder=None` records nothing, `cache_lookup=None` keeps the cache in memory,
    `cache_size=0` turns that off. `aask` runs the recorder and the look-up off the loop unless
    `arecorder` and `alookup` do it themselves (the engine's database threads).
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        base_backoff: float = DEFAULT_BASE_BACKOFF,
        max_backoff: float | None = None,
        max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
        temperature: float = 0.0,
        seed: int | None = None,
        recorder: Recorder | None = record_calls,
        cache_lookup: CacheLookup | None = lookup_cached,
        cache_size: int = 4096,
        arecorder: AsyncRecorder | None = None,
        alookup: AsyncCacheLookup | None = None,
        max_tokens: int | None = None,
        cap_parameter: str | None = None,
        schema_bounds: bool | None = None,
    ):
        base_url = base_url if base_url is not None else settings.SHERLOCK_JUDGE_BASE_URL
        if not base_url:
            raise ImproperlyConfigured("the judge needs SHERLOCK_JUDGE_BASE_URL (or base_url=)")
        api_key = api_key if api_key is not None else (settings.OPENAI_API_KEY or "")
        timeout = float(timeout if timeout is not None else settings.SHERLOCK_JUDGE_TIMEOUT)
        if max_retries is None:
            max_retries = settings.SHERLOCK_JUDGE_MAX_RETRIES
        if max_backoff is None:
            max_backoff = settings.SHERLOCK_JUDGE_MAX_BACKOFF
        if seed is None:
            seed = settings.SHERLOCK_JUDGE_SEED
        if max_tokens is None:
            max_tokens = settings.SHERLOCK_JUDGE_MAX_TOKENS
        if schema_bounds is None:
            schema_bounds = settings.SHERLOCK_JUDGE_SCHEMA_BOUNDS
        choice = cap_parameter or settings.SHERLOCK_JUDGE_MAX_TOKENS_PARAM
        self._core = _Core(
            base_url=base_url,
            api_key=api_key,
            model=model or settings.SHERLOCK_JUDGE_MODEL,
            retry=RetryPolicy(
                timeout=timeout,
                max_retries=max(0, int(max_retries)),
                base_backoff=base_backoff,
                max_backoff=float(max_backoff),
                max_retry_after=max_retry_after,
            ),
            temperature=temperature,
            seed=seed,
            recorder=recorder,
            cache_lookup=cache_lookup,
            cache=AnswerCache(cache_size),
            max_tokens=max(0, int(max_tokens or 0)),
            cap_parameter=cap_parameter_for(base_url, choice),
            bounds=server_bounds(base_url, bool(schema_bounds)),
            alookup=alookup if cache_lookup is not None else None,
            arecorder=arecorder if recorder is not None else None,
        )
        self._context = JudgeContext()
        # The failures of the trial this view is bound to, by cache key (None: not a trial's).
        self._failures: dict[str, JudgeAnswer] | None = None

    # -- configuration and context --

    @property
    def model(self) -> str:
        """The default judge model (a check may ask another with `ask(..., model=)`)."""
        return self._core.model

    @property
    def base_url(self) -> str:
        return self._core.base_url

    @property
    def timeout(self) -> float:
        return self._core.retry.timeout

    @property
    def max_tokens(self) -> int:
        """The fixed completion cap, or 0 when each question's is sized from its schema."""
        return self._core.max_tokens

    @property
    def cap_parameter(self) -> str:
        """The request parameter the cap is sent as (`max_tokens` or `max_completion_tokens`)."""
        return self._core.cap_parameter

    @property
    def bounds(self) -> frozenset:
        """The bound keywords answer schemas go out with (`maxItems`, `maxLength`): the
        server's (`schema.server_bounds`), less any it refused."""
        return self._core.bounds - self._core.refused

    @property
    def context(self) -> JudgeContext:
        return self._context

    @property
    def sdk(self) -> openai.OpenAI:
        """The process's shared SDK client this judge sends through (`sdk.openai_client`)."""
        return self._core.sdk

    def bind(self, *, run=None, trial=None, agent=None, repetition=None) -> JudgeClient:
        """A view of this judge that records its calls against a run, trial and agent.

        Each may be a model instance or a primary key; unset ones keep the current binding.
        A `Trial` instance also gives its run and `repetition` (the agent repetition, which
        keeps the cache from sharing judgements between repetitions), and a
        `Run` instance gives its agent (pass `agent=` to save that lookup). Binding a trial
        starts that trial's record of failed questions, which are not asked again through
        this view (or views bound from it without another trial).
        """
        current = self._context
        run_id = _pk(run) if run is not None else current.run_id
        trial_id = _pk(trial) if trial is not None else current.trial_id
        agent_id = _pk(agent) if agent is not None else current.agent_id
        if trial is not None and not isinstance(trial, int):
            if run is None and getattr(trial, "run_id", None) is not None:
                run_id = trial.run_id
            if repetition is None and getattr(trial, "repetition", None) is not None:
                repetition = trial.repetition
        if agent is None and current.agent_id is None and run is not None:
            # The cost ledger is kept per agent: a Run instance knows it (one query per bind
            # at most, i.e. per trial); a bare run id is resolved by the recorder instead.
            agent_version = getattr(run, "agent_version", None)
            agent_id = getattr(agent_version, "agent_id", None)
        view = object.__new__(JudgeClient)
        view._core = self._core
        view._context = JudgeContext(
            run_id=run_id,
            trial_id=trial_id,
            agent_id=agent_id,
            repetition=current.repetition if repetition is None else int(repetition),
        )
        view._failures = {} if trial is not None else self._failures
        return view

    def clear_cache(self) -> None:
        """Forget the in-memory cache (stored calls still answer through `cache_lookup`)."""
        self._core.cache.clear()

    # -- asking --

    def ask(
        self, rubric: Rubric, variables: dict, *, model: str | None = None, cache: bool = True
    ) -> JudgeAnswer:
        """Ask the judge to answer `rubric` for `variables`; never raises for a judge failure.

        The user prompt is `rubric.template.format(**variables)` under `rubric.system`. With
        `cache=False` the question always goes to the model (the call is still recorded and
        can serve later asks), unless it already failed in this trial. Blocks this thread.
        """
        return run_unsuspended(self._ask_bounded(BLOCKING, rubric, variables, model, cache))

    async def aask(
        self, rubric: Rubric, variables: dict, *, model: str | None = None, cache: bool = True
    ) -> JudgeAnswer:
        """`ask`, awaited on the running event loop: the request goes out through the loop's
        `AsyncOpenAI`, the retries' waits and the wait for an identical question in flight
        suspend, and the database work is awaited (`arecorder`, `alookup`). The same flow,
        the same calls recorded, the same cache (shared with sync askers on other threads)."""
        return await self._ask_bounded(ON_LOOP, rubric, variables, model, cache)

    async def _ask_bounded(self, io, rubric, variables, model, cache: bool) -> JudgeAnswer:
        core = self._core
        bounds = self.bounds
        answer = await self._ask(io, rubric, variables, model, cache, bounds)
        refused = _refused_bounds(answer) & bounds
        if refused:
            # The server will not take these keywords: ask again without, and send them no
            # more (docs/checks.md, "The judge"; SHERLOCK_JUDGE_SCHEMA_BOUNDS=false says it
            # upfront). A plain assignment of a new set: safe between threads.
            core.refused = core.refused | refused
            log.warning(
                "the judge at %s refused %s in the answer schema (%s); not sending it from now "
                "on (SHERLOCK_JUDGE_SCHEMA_BOUNDS=false sends no bounds at all)",
                core.base_url,
                " and ".join(sorted(refused)),
                answer.error,
            )
            again = await self._ask(io, rubric, variables, model, cache, bounds - refused)
            again.calls = [*answer.calls, *again.calls]
            return again
        return answer

    async def _ask(self, io, rubric, variables, model, cache: bool, bounds) -> JudgeAnswer:
        started = time.perf_counter()
        core = self._core
        question = build_question(
            rubric,
            variables,
            base_url=core.base_url,
            model=model or core.model,
            temperature=core.temperature,
            seed=core.seed,
            repetition=self._context.repetition,
            max_tokens=core.max_tokens,
            token_param=core.cap_parameter,
            bounds=bounds,
        )
        earlier = self._earlier_failure(question)
        if earlier is not None:
            return earlier
        if not cache:
            answer, entry = await self._ask_unless_failed(io, question)
            if entry is not None:
                core.cache.put(question.cache_key, entry)
            return answer

        async def lookup(key):
            return await io.lookup(core, key)

        async def wait(other):
            await io.wait(core, other)

        return await core.cache.answer(
            question.cache_key,
            ask=lambda: self._ask_unless_failed(io, question),
            serve=lambda entry: self._from_cache(io, question, entry, started),
            lookup=lookup if core.cache_lookup is not None else None,
            wait=wait,
        )

    async def _ask_unless_failed(
        self, io, question: Question
    ) -> tuple[JudgeAnswer, CachedAnswer | None]:
        """The model's answer, unless this trial already failed on the question. Looked up
        again when it is this caller's turn to ask (another thread or coroutine of the same
        trial may have failed on it while this one waited), and a failure is filed before the
        cache releases the askers waiting for it."""
        earlier = self._earlier_failure(question)
        if earlier is not None:
            return earlier, None
        answer, entry = await self._ask_model(io, question)
        if not answer.ok and self._failures is not None:
            self._failures[question.cache_key] = answer
        return answer, entry

    def _earlier_failure(self, question: Question) -> JudgeAnswer | None:
        """The failure this trial already had for `question`, as a new answer without calls."""
        failed = self._failures.get(question.cache_key) if self._failures is not None else None
        if failed is None:
            return None
        return JudgeAnswer(
            ok=False,
            error=failed.error,
            error_code=failed.error_code,
            raw=failed.raw,
            model=failed.model,
            cache_key=failed.cache_key,
            reused=True,
        )

    async def _from_cache(
        self, io, question: Question, entry: CachedAnswer, started: float
    ) -> JudgeAnswer | None:
        try:
            data = json.loads(entry.raw)
        except (TypeError, ValueError):
            return None  # never serve junk; ask the model instead
        call = new_call(
            question,
            question.request,
            self._context,
            attempt=1,
            cached=True,
            response={"cached_from": entry.source_call_id},
            raw=entry.raw,
            latency_ms=(time.perf_counter() - started) * 1000,
        )
        await self._record(io, [call])
        return JudgeAnswer(
            ok=True,
            data=data,
            raw=entry.raw,
            calls=[call],
            cached=True,
            model=question.model,
            cache_key=question.cache_key,
        )

    async def _ask_model(self, io, question: Question) -> tuple[JudgeAnswer, CachedAnswer | None]:
        """The question, with retries, and one re-ask for an unusable answer (fresh and brief
        for a cut-off one, a repair for any other); with the cache entry for a good answer
        (None for a failure)."""
        calls: list[JudgeCall] = []
        request = question.request
        raw: str | None = None
        outcome: Failure | None = None
        data: dict | None = None
        retry: str | None = None  # the re-ask made, once the first answer was unusable
        for _ in range(2):  # the question, then at most one repair
            sent = await self._send(io, question, request, calls)
            if isinstance(sent, Failure):
                outcome = sent
                break
            payload, latency_ms = sent
            data, raw, problem, code = read_answer(payload, question.prepared)
            usage = payload.get("usage") or {}
            figures = usage_problem(usage)
            if figures is not None:
                # A usage the columns cannot hold is no answer to price or trust: the call is
                # an error with the figure's range, never stored as it came (nor as $0).
                usage, problem, code = {}, figures, MALFORMED
            call = new_call(
                question,
                request,
                self._context,
                attempt=len(calls) + 1,
                response=payload,
                raw=raw,
                latency_ms=latency_ms,
                prompt_tokens=usage.get("prompt_tokens") or 0,
                completion_tokens=usage.get("completion_tokens") or 0,
                error=problem,
            )
            calls.append(call)
            if problem is None:
                outcome = None
                break
            if figures is not None:
                outcome = Failure(f"malformed answer: {problem}", code)
                break
            if code == CUT_OFF:
                problem = f"{problem} ({question.max_tokens} tokens)"
                call.error = problem
            if retry is None:
                outcome = Failure(f"malformed answer: {problem}", code)
            else:
                outcome = Failure(f"malformed answer after a {retry} retry: {problem}", code)
            if code == CUT_OFF:
                # Asked again fresh and briefer, never with the cut-off text pasted back: it
                # would fill the context the answer just ran out of.
                retry, request = "brevity", brevity_request(question)
            else:
                # The repair: the judge sees its own answer and what was wrong with it.
                retry, request = "repair", repair_request(question, raw, problem)
        await self._record(io, calls)
        if outcome is not None:
            failed = JudgeAnswer(
                ok=False,
                error=outcome.error,
                error_code=outcome.code,
                raw=raw,
                calls=calls,
                model=question.model,
                cache_key=question.cache_key,
            )
            return failed, None
        assert raw is not None  # an answer that parsed had a text
        answer = JudgeAnswer(
            ok=True,
            data=data,
            raw=raw,
            calls=calls,
            model=question.model,
            cache_key=question.cache_key,
        )
        return answer, CachedAnswer(raw=raw, source_call_id=calls[-1].pk)

    async def _send(
        self, io, question: Question, request: dict, calls: list
    ) -> tuple[dict, float] | Failure:
        """One request under the retry policy; every failed attempt becomes a recorded call.

        Returns the response JSON and its latency, or the last failure once retries run out.
        """
        core = self._core

        def failed(failure: AttemptFailure, latency_ms: float) -> None:
            calls.append(
                new_call(
                    question,
                    request,
                    self._context,
                    attempt=len(calls) + 1,
                    response=failure.response,
                    latency_ms=latency_ms,
                    error=failure.error,
                )
            )

        return await core.retry.run(lambda: io.send(core, request), failed, io.sleep)

    async def _record(self, io, calls: list) -> None:
        # A recorder failure (the database is down) propagates: losing the ledger silently
        # would be worse than failing the trial, which the engine retries.
        if self._core.recorder is not None and calls:
            await io.record(self._core, calls, self._context)


def _pk(value):
    return value if isinstance(value, int) or value is None else value.pk


def _refused_bounds(answer: JudgeAnswer) -> frozenset:
    """The bound keywords an HTTP 400 names: the server does not take them in a schema."""
    error = (answer.error or "").lower()
    if answer.ok or answer.error_code != HTTP_ERROR or not error.startswith("http 400"):
        return frozenset()
    return frozenset(word for word in (MAX_ITEMS, MAX_LENGTH) if word.lower() in error)


# --- the default judge ----------------------------------------------------------------------

_defaults: dict[tuple, JudgeClient] = {}
_defaults_lock = threading.Lock()


def get_default_judge(**context) -> JudgeClient | None:
    """The judge configured in settings, bound to `context` (run, trial, agent, repetition).

    None when `SHERLOCK_JUDGE_BASE_URL` is empty: no judge is configured, and model checks are
    skipped (with that reason) rather than failed. One client per configuration per process,
    so its cache is shared by every trial this process scores.
    """
    base_url = settings.SHERLOCK_JUDGE_BASE_URL
    if not base_url:
        return None
    key = (
        os.getpid(),  # a forked worker builds its own (fresh locks, fresh cache)
        base_url,
        settings.OPENAI_API_KEY,
        settings.SHERLOCK_JUDGE_MODEL,
        settings.SHERLOCK_JUDGE_TIMEOUT,
        settings.SHERLOCK_JUDGE_MAX_RETRIES,
        settings.SHERLOCK_JUDGE_MAX_BACKOFF,
        settings.SHERLOCK_JUDGE_SEED,
        settings.SHERLOCK_JUDGE_MAX_TOKENS,
        settings.SHERLOCK_JUDGE_MAX_TOKENS_PARAM,
        settings.SHERLOCK_JUDGE_SCHEMA_BOUNDS,
    )
    judge = _defaults.get(key)
    if judge is None:
        with _defaults_lock:
            judge = _defaults.get(key)
            if judge is None:
                judge = _defaults[key] = JudgeClient()
    return judge.bind(**context) if context else judge


def reset_default_judges() -> None:
    """Forget the default judges and their caches (tests: the database was rolled back)."""
    with _defaults_lock:
        _defaults.clear()


def usage_problem(usage) -> str | None:
    """Why a judge server's reported token usage cannot be stored (a sentence), or None."""
    if not isinstance(usage, dict):
        return "usage: must be an object"
    for name in ("prompt_tokens", "completion_tokens"):
        value = usage.get(name)
        problem = None if value is None else TOKENS.problem(value)
        if problem:
            return f"usage.{name}: {problem}"
    return None
