"""Probe before you spend: ask the judge one question per rubric family, and keep the answer.

`manage.py check_judge` calls `probe_judge`: one real question per rubric family
(`evaluations.checks.rubrics.PROBES`), asked past the cache (a cached answer says nothing about
the server), with the caps and bounds a run would send. Each family's `FamilyProbe` says whether
a valid answer came back, how long it took, its tokens, the cap, and what to change when it
failed (`advice`). `store_probe` keeps the result as a `JudgeProbe` row, and `judge_status` reads
the newest one for the configured server and model: the one status the admin shows and a run's
estimate carries (`evaluations.costs.estimate.estimate_run`), so a run whose blocking model checks
cannot be scored says so before it starts.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings

from evaluations.checks import rubrics
from evaluations.judge.errors import (
    CONNECTION,
    CONNECTION_REFUSED,
    CUT_OFF,
    HTTP_ERROR,
    MALFORMED,
    NAME_NOT_FOUND,
    RATE_LIMITED,
    REFUSED,
    SERVER_ERROR,
    TIMEOUT,
    TLS,
)
from evaluations.models import JudgeProbe, ModelPrice

CONTEXT_FLAGS = "llama.cpp -c, vLLM --max-model-len, Ollama num_ctx"
_STATUS = re.compile(r"^HTTP (\d{3})")
_SCHEMA_WORDS = ("maxitems", "maxlength", "schema", "response_format", "json_schema", "strict")


@dataclass
class FamilyProbe:
    """What one family's probe question got from the judge."""

    family: str
    rubric_id: str
    ok: bool
    latency_ms: float
    prompt_tokens: int
    completion_tokens: int
    max_tokens: int
    error: str = ""
    error_code: str = ""
    advice: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def probe_judge(judge, families=None) -> list[FamilyProbe]:
    """Ask `judge` one probe question per family (all of `rubrics.FAMILIES` by default)."""

    results = []
    for family in families or rubrics.FAMILIES:
        rubric, variables = rubrics.PROBES[family]
        started = time.perf_counter()
        answer = judge.ask(rubric, variables, cache=False)
        latency_ms = (time.perf_counter() - started) * 1000
        sent = [call.request for call in answer.calls if not call.cached]
        cap = next((r.get(judge.cap_parameter) for r in reversed(sent) if r), None) or 0
        results.append(
            FamilyProbe(
                family=family,
                rubric_id=rubric.id,
                ok=answer.ok,
                latency_ms=round(latency_ms, 1),
                prompt_tokens=answer.prompt_tokens,
                completion_tokens=answer.completion_tokens,
                max_tokens=int(cap),
                error=answer.error or "",
                error_code=answer.error_code or "",
                advice=advice(answer, judge, cap),
            )
        )
    return results


def advice(answer, judge, cap: int) -> str:  # noqa: C901
    """What to change so that this family gets valid answers ("" when nothing needs to)."""
    if answer.ok:
        if any((call.error or "").startswith("the answer was cut off") for call in answer.calls):
            return (
                f"answered only after a brevity retry: raise SHERLOCK_JUDGE_MAX_TOKENS "
                f"(the cap was {cap}) or the server's context size ({CONTEXT_FLAGS})"
            )
        return ""
    code = answer.error_code
    error = answer.error or ""
    if code == CUT_OFF:
        return (
            f"the answer was cut off at the cap ({cap} tokens): raise SHERLOCK_JUDGE_MAX_TOKENS, "
            f"and if the prompt fills the server's context, its context size ({CONTEXT_FLAGS})"
        )
    if code == TIMEOUT:
        return (
            f"no answer within {judge.timeout:g} s: raise SHERLOCK_JUDGE_TIMEOUT, or use a "
            "faster server or a smaller model"
        )
    if code == CONNECTION_REFUSED:
        return (
            f"nothing listens at {shown_url(judge.base_url)}: start the judge's server, or "
            "check the port in SHERLOCK_JUDGE_BASE_URL"
        )
    if code == NAME_NOT_FOUND:
        return (
            f"the host of {shown_url(judge.base_url)} is not known: check its spelling in "
            "SHERLOCK_JUDGE_BASE_URL and this machine's DNS"
        )
    if code == TLS:
        return (
            f"TLS failed at {shown_url(judge.base_url)}: check http:// against https:// in "
            "SHERLOCK_JUDGE_BASE_URL, and that this machine trusts the server's certificate "
            "(SSL_CERT_FILE)"
        )
    if code == CONNECTION:
        return f"the connection to {shown_url(judge.base_url)} failed: check the server's log"
    if code == RATE_LIMITED:
        return "rate limited: try again later, or raise SHERLOCK_JUDGE_MAX_RETRIES"
    if code == HTTP_ERROR:
        match = _STATUS.match(error)
        status = int(match.group(1)) if match else 0
        if status in (401, 403):
            return "the server refused the key: check OPENAI_API_KEY"
        if status == 404:
            return (
                f"check SHERLOCK_JUDGE_MODEL ({judge.model}: the server's model id or --alias) "
                "and SHERLOCK_JUDGE_BASE_URL (usually ending in /v1)"
            )
        if status == 400 and any(word in error.lower() for word in _SCHEMA_WORDS):
            return (
                "the server refuses the answer schema: if it names maxItems, set "
                "SHERLOCK_JUDGE_SCHEMA_BOUNDS=false; otherwise the server needs structured "
                "outputs (response_format json_schema)"
            )
        return "the server refused the request: check the model and the server's OpenAI API"
    if code == SERVER_ERROR:
        return (
            "the server failed (5xx or an unreadable answer): see its log; a context too small "
            f"for the prompt is a common cause ({CONTEXT_FLAGS})"
        )
    if code in (MALFORMED, REFUSED):
        return (
            "the model's answers do not fit the schema: use a server that enforces structured "
            "outputs (json_schema), or a larger, instruction-tuned model"
        )
    return "see the error"


def store_probe(judge, results: list[FamilyProbe]):
    """Keep a probe's results as the judge's status (a `JudgeProbe` row)."""

    return JudgeProbe.objects.create(
        base_url=judge.base_url,
        model=judge.model,
        ok=all(result.ok for result in results),
        priced=ModelPrice.objects.filter(model=judge.model).exists(),
        families={result.family: result.as_dict() for result in results},
    )


def shown_url(url: str) -> str:
    """The base URL as the status shows it (to Builders, in run estimates): without any
    user:password a deployment may have put in it."""
    parts = urlsplit(url)
    if not (parts.username or parts.password):
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def judge_status() -> dict:
    """The configured judge's status: configured or not, the newest probe of this server and
    model (when, which families failed, why, what to change), whether the model has a price,
    and a one-line `summary`. Two queries; the admin and `estimate_run` both show it."""

    base_url, model = settings.SHERLOCK_JUDGE_BASE_URL, settings.SHERLOCK_JUDGE_MODEL
    if not base_url:
        return {
            "configured": False,
            "summary": "no judge configured (SHERLOCK_JUDGE_BASE_URL): model checks are skipped",
        }
    probe = JudgeProbe.objects.filter(base_url=base_url, model=model).first()
    priced = settings.SHERLOCK_JUDGE_FREE or ModelPrice.objects.filter(model=model).exists()
    status = {
        "configured": True,
        "base_url": shown_url(base_url),
        "model": model,
        "priced": priced,
        "probed_at": probe.created_at.isoformat() if probe else None,
        "ok": probe.ok if probe else None,
        "failed_families": probe.failed_families if probe else [],
        "families": {
            name: {key: family.get(key, "") for key in ("ok", "error", "advice")}
            for name, family in (probe.families if probe else {}).items()
        },
    }
    judge = f"{model} at {shown_url(base_url)}"
    if probe is None:
        summary = f"{judge}: not probed yet (manage.py check_judge)"
    elif probe.ok:
        summary = f"{judge}: every rubric family answered ({probe.created_at:%Y-%m-%d %H:%M})"
    else:
        first = status["families"][status["failed_families"][0]]
        summary = (
            f"{judge}: {', '.join(status['failed_families'])} failed "
            f"({probe.created_at:%Y-%m-%d %H:%M}): {first['error']}; {first['advice']}"
        )
    if not priced:
        summary += "; no ModelPrice for the model (its cost shows as price missing)"
    status["summary"] = summary
    return status
