"""What the commands do, as functions the CLI and the Python API share: `run` (the team's code
on a dataset, uploaded and scored by Sherlock), `evaluate` (a run Sherlock executes itself),
`gate` (publication requested and its gate runs fulfilled) and `verify` (is it published?).

Every outcome is the server's: the verdict of a run (`GET /runs/{id}/verdict/`) or the decision
of a publish request. A run's verdict is awaited by long polls (the server answers the moment
the run finishes); a publish request's decision by polling with backoff (0.5 s growing to 5 s).
Either way, until `wait` seconds have passed; a verdict still pending then is incomplete
(exit 2), never a pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sherlock_client import metadata as source
from sherlock_client import tasks
from sherlock_client.api import Client
from sherlock_client.http import ApiError
from sherlock_client.result import (
    EXIT_ERROR,
    EXIT_FAILED,
    EXIT_INCOMPLETE,
    EXIT_PASSED,
    Result,
    case_rows,
)
from sherlock_client.runner import Limits, Stats, execute

# One verdict call holds at most this long on the server (which may hold less).
LONG_POLL_SECONDS = 20.0


class ConfigError(Exception):
    """Something the caller must fix before anything runs (exit 3)."""


def _poll(deadline: float, step: list[float], sleep: Callable[[float], None]) -> bool:
    """Sleep the next backoff step unless past the deadline; False when time is up."""
    now = time.monotonic()
    if now >= deadline:
        return False
    sleep(min(step[0] * random.uniform(0.8, 1.2), max(0.0, deadline - now)))
    step[0] = min(step[0] * 1.5, 5.0)
    return True


def await_verdict(
    api: Client,
    run_id: int,
    *,
    policy: int | None = None,
    wait: float = 1800.0,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """The run's verdict once it is no longer pending (or the pending one at the deadline).

    Each call is a long poll (`?wait=`): the server answers as soon as the run finishes, so
    the verdict is known within a fraction of a second of it. A server that answers at once
    (one before long polls, or one whose limit is lower) is asked again after a backoff."""
    deadline = time.monotonic() + wait
    step = [0.5]
    # Held under the HTTP timeout of one call, so a long poll is never taken for a dead server.
    longest = max(0.0, min(LONG_POLL_SECONDS, api.session.timeout - 5.0))
    while True:
        hold = max(0.0, min(longest, deadline - time.monotonic()))
        asked = time.monotonic()
        verdict: dict[str, Any] = dict(api.verdict(run_id, policy=policy, wait=hold or None))
        if verdict.get("outcome") != "pending" and verdict.get("exit_code") is not None:
            return verdict
        # Answered at once (no hold asked, or a server that does not hold): back off first.
        at_once = not hold or time.monotonic() - asked < hold / 2
        if time.monotonic() >= deadline or (at_once and not _poll(deadline, step, sleep)):
            verdict.setdefault("reasons", [])
            verdict["reasons"] = [
                *verdict["reasons"],
                {"code": "wait_expired", "detail": f"no verdict within {wait:g} s"},
            ]
            return verdict


def baseline(
    api: Client, agent: str, version_id: int | None, dataset: str, run_id: int
) -> dict[str, Any] | None:
    """The comparison (`/runs/compare/`) of the live version's latest completed run on the same
    dataset with this run; None when there is no live version or it is this one."""
    try:
        live = api.agent(agent).get("live_version")
        if not live or live == version_id:
            return None
        for candidate in api.runs(agent_version=live, status="completed"):
            if candidate.get("dataset") == dataset and candidate.get("id") != run_id:
                return api.compare(candidate["id"], run_id)
    except ApiError:
        return None  # the comparison is a courtesy: the verdict does not depend on it
    return None


def result_of(
    api: Client,
    run: dict[str, Any],
    verdict: dict[str, Any],
    *,
    stats: Stats | None = None,
    compare: bool = True,
    notes: list[str] | None = None,
    policy: int | None = None,
) -> Result:
    run_id = run["id"]
    details = run if "agent" in run else api.run(run_id)
    trials = list(api.trials(run_id))
    try:
        judged = list(api.case_results(run_id))
    except ApiError as exc:
        if exc.status != 404:
            raise
        judged = []  # a server without /case-results/: the table shows no pass or fail
    agent = str(details.get("agent") or "")
    dataset = str(details.get("dataset") or "")
    result = Result(
        run={**details, **run, "url": verdict.get("url") or run.get("url")},
        verdict=verdict,
        agent=agent,
        version=str(
            details.get("version")
            or details.get("agent_version_name")
            or details.get("agent_version_number")
            or ""
        ),
        dataset=dataset,
        cases=case_rows(trials, judged),
        stats=stats,
        notes=notes or [],
    )
    try:
        result.junit = api.junit(run_id, policy=policy)
    except ApiError as exc:
        # A server before `/runs/{id}/junit/`: the report holds the verdict alone.
        result.notes.append(f"the server's JUnit report could not be read: {exc}")
    if compare and agent and dataset:
        result.baseline = baseline(api, agent, details.get("agent_version"), dataset, run_id)
    return result


@dataclass
class RunOptions:
    repetitions: int = 1
    concurrency: int = 8
    timeout: float = 60.0
    wait: float = 1800.0
    policy: int | None = None
    progress: bool = True
    compare: bool = True
    batch: int = 200
    flush_seconds: float = 0.5
    purpose: str = "auto"  # auto: a waiting gate run of the version if any, else a new one
    on_run: Callable[[dict[str, Any]], None] | None = None  # told the run as soon as it exists
    # The running loop the calls are made on (`aevaluate`'s caller's); None: a loop of its own.
    loop: asyncio.AbstractEventLoop | None = None


def load_task(task: str | Callable[..., Any]) -> tuple[Callable[..., Any], str | None]:
    """The function and its entrypoint (`package.module:function`, recorded in the version's
    config), None for a function no import can name (a lambda, a nested function)."""
    if callable(task):
        module = getattr(task, "__module__", None)
        name = getattr(task, "__qualname__", "")
        nameable = module and name and "<" not in name and module != "__main__"
        return task, f"{module}:{name}" if nameable else None
    try:
        return tasks.load(task), task
    except tasks.TaskNotFound as exc:
        raise ConfigError(str(exc)) from exc


def fulfil(api: Client, run: dict[str, Any], fn: Callable[..., Any], options: RunOptions) -> Stats:
    """Run and upload the work the run still lacks, then finish it (idempotent)."""
    work: list[dict[str, Any]] = [dict(item) for item in api.work(run["id"])]
    if options.on_run:
        options.on_run({**run, "work": len(work)})
    stats = Stats()
    if work:
        stats = execute(
            api,
            run["id"],
            fn,
            work,
            concurrency=options.concurrency,
            timeout=options.timeout,
            progress=options.progress,
            batch=options.batch,
            flush_seconds=options.flush_seconds,
            limits=Limits.of(run),
            loop=options.loop,
        )
    api.finish(run["id"])
    return stats


def run(
    api: Client,
    *,
    agent: str | None,
    dataset: str | None,
    task: str | Callable[..., Any],
    version: str | None = None,
    resume: int | None = None,
    options: RunOptions | None = None,
    metadata: dict[str, Any] | None = None,
) -> Result:
    """`sherlock run`: the team's function on every case and repetition of the dataset's latest
    frozen version, uploaded, scored by Sherlock, and its verdict. `resume` continues a run:
    only the work it still lacks is done."""
    options = options or RunOptions()
    fn, entrypoint = load_task(task)
    check_policy(api, options.policy)
    if resume is not None:
        created = api.run(resume)
        return _fulfilled(api, created, fn, options, new=False)
    if not agent or not dataset:
        raise ConfigError("--agent and --dataset are required (or --resume RUN)")
    # Everything a run needs is checked before anything is made: a dataset typo must not leave
    # a version behind, a policy typo not a run.
    api.latest_frozen_version(dataset)
    found = source.collect() if metadata is None else metadata
    name = version or source.default_version_name(found, entrypoint or _name_of(fn))
    if not name:
        raise ConfigError("not in a git repository: name the version with --version")
    config = {"entrypoint": entrypoint} if entrypoint else {}
    api.ensure_version(agent, name, config)
    created = _client_run(api, agent, name, dataset, options, {**found, "config": config})
    return _fulfilled(api, created, fn, options, new=created.get("purpose") != "gate")


def _name_of(fn: Callable[..., Any]) -> str | None:
    """A task no import can name (a lambda, a function of `__main__`) is named by its own name
    in the default version name; a lambda by nothing."""
    name = getattr(fn, "__name__", "")
    return name if name and "<" not in name else None


def _fulfilled(
    api: Client, created: dict[str, Any], fn: Callable[..., Any], options: RunOptions, *, new: bool
) -> Result:
    """The run fulfilled, finished and awaited. An error in the client while fulfilling a run
    this call created cancels it, so no run is left waiting for a client that is gone. What
    `--resume` continues is kept: a run interrupted (Ctrl-C, SIGTERM) or whose uploads the
    server stopped taking (its line says how to resume), and a gate run, which stays its
    publish request's to fulfil again."""
    try:
        stats = fulfil(api, created, fn, options)
    except ApiError:
        raise
    except Exception:
        if new:
            with contextlib.suppress(ApiError):
                api.cancel(created["id"])
        raise
    verdict = await_verdict(api, created["id"], policy=options.policy, wait=options.wait)
    return result_of(
        api, created, verdict, stats=stats, compare=options.compare, policy=options.policy
    )


def check_policy(api: Client, policy: int | None) -> None:
    """Refuse before any call a `--policy` that names no publishing policy (the verdict would
    refuse it only after the whole run). A key whose role may not read policies cannot tell:
    the verdict then decides, as before."""
    if policy is None:
        return
    try:
        api.session.get(f"policies/{policy}/")
    except ApiError as exc:
        if exc.status == 404:
            raise ConfigError(
                f"--policy {policy}: no publishing policy has that id (or you may not see it)"
            ) from None
        if exc.status != 403:
            raise


def _client_run(
    api: Client, agent: str, name: str, dataset: str, options: RunOptions, metadata: dict[str, Any]
) -> dict[str, Any]:
    """A waiting gate run of this version on this dataset, taken up (`purpose` gate, its
    publish request waits for it), else a new run (`purpose` auto or manual)."""
    if options.purpose in ("auto", "gate"):
        try:
            return dict(
                api.create_client_run(
                    agent=agent, version=name, dataset=dataset, purpose="gate", metadata=metadata
                )
            )
        except ApiError as exc:
            if exc.code != "no_gate_run" or options.purpose == "gate":
                raise
    return dict(
        api.create_client_run(
            agent=agent,
            version=name,
            dataset=dataset,
            repetitions=options.repetitions,
            metadata=metadata,
        )
    )


def evaluate_remote(
    api: Client,
    *,
    agent: str,
    version: str,
    dataset: str,
    options: RunOptions | None = None,
) -> Result:
    """`sherlock evaluate`: a run Sherlock executes itself (its adapter), started and awaited."""
    options = options or RunOptions()
    check_policy(api, options.policy)
    found = api.version(agent, version)
    if found.get("adapter") == "client":
        # Sherlock never calls a client version: its run would wait for uploads for good.
        raise ApiError(
            f"{agent} version {found.get('name') or version} runs on the client: run it with "
            f"`sherlock run --agent {agent} --dataset {dataset} --task module:function`",
            status=400,
            code="client_version",
            field="version",
        )
    dataset_version = api.latest_frozen_version(dataset)
    started = api.start_run(found["id"], dataset_version["id"], options.repetitions)
    if options.on_run:
        options.on_run(started)
    verdict = await_verdict(api, started["id"], policy=options.policy, wait=options.wait)
    return result_of(api, started, verdict, compare=options.compare, policy=options.policy)


# --- publishing --------------------------------------------------------------------------------

OPEN_STATES = {"evaluating", "passed", "blocked", "published", "bypassed"}
# A blocked decision's verdict that decided nothing: what the client says, and its fallback.
UNDECIDED = {
    "incomplete": ("the verdict is incomplete", "evidence is missing"),
    "insufficient": ("insufficient evidence", "more cases would decide it"),
}
GATE_EXIT = {
    "passed": EXIT_PASSED,
    "published": EXIT_PASSED,
    "bypassed": EXIT_PASSED,
    "blocked": EXIT_FAILED,
}


@dataclass
class GateResult:
    request: dict[str, Any]
    exit_code: int
    lines: list[str] = field(default_factory=list)
    runs: list[Result] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "publish_request": self.request.get("id"),
            "state": self.request.get("state"),
            "exit_code": self.exit_code,
            "decision": self.request.get("decision"),
            "runs": [r.as_dict() for r in self.runs],
            "lines": self.lines,
        }


def current_request(api: Client, version_id: int) -> dict[str, Any] | None:
    requests = [
        r for r in api.publish_requests(agent_version=version_id) if r.get("state") in OPEN_STATES
    ]
    return max(requests, key=lambda r: r["id"]) if requests else None


def gate(
    api: Client,
    *,
    agent: str,
    version: str | None,
    task: str | Callable[..., Any] | None = None,
    options: RunOptions | None = None,
    metadata: dict[str, Any] | None = None,
    say: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> GateResult:
    """`sherlock gate`: request publication unless a request is open, fulfil its waiting client
    gate runs with `task`, and await the decision: 0 passed (or already published), 1 blocked,
    2 blocked on an incomplete verdict (evidence missing, not a failure) or still evaluating
    at the deadline."""
    options = options or RunOptions()
    fn, entrypoint = load_task(task) if task is not None else (None, None)
    sent = dict(source.collect() if metadata is None else metadata)
    sent["config"] = {"entrypoint": entrypoint} if entrypoint else {}
    version = version_name(version, sent, entrypoint or (_name_of(fn) if fn else None))
    found = api.version(agent, version)
    request = current_request(api, found["id"])
    if request is None:
        request = api.request_publication(found["id"])
        say(f"sherlock: publication requested (request {request['id']})")
    else:
        say(f"sherlock: publish request {request['id']} is {request['state']}")
    fulfilled: set[int] = set()
    results: list[Result] = []
    hinted = False
    deadline = time.monotonic() + options.wait
    step = [0.5]
    while request.get("state") == "evaluating":
        gate_runs = {r["id"] for r in request.get("runs") or []}
        waiting = [
            r
            for r in api.runs(status="waiting", agent_version=found["id"])
            if r["id"] in gate_runs and r["id"] not in fulfilled
        ]
        for waiting_run in waiting:
            if fn is None:
                if not hinted:
                    say(
                        f"sherlock: gate run(s) {', '.join(str(r['id']) for r in waiting)} wait "
                        "for the client: pass --task to fulfil them (or `sherlock run --resume`)"
                    )
                    hinted = True
                continue
            say(f"sherlock: fulfilling gate run {waiting_run['id']}")
            claimed = dict(
                api.create_client_run(
                    agent=agent,
                    version=str(found.get("name") or version),
                    dataset=waiting_run["dataset"],
                    purpose="gate",
                    publish_request=request["id"],
                    metadata=sent,
                )
            )
            stats = fulfil(api, claimed, fn, options)
            fulfilled.add(waiting_run["id"])
            verdict = await_verdict(
                api,
                waiting_run["id"],
                policy=options.policy,
                wait=max(1.0, deadline - time.monotonic()),
            )
            results.append(
                result_of(
                    api, waiting_run, verdict, stats=stats, compare=False, policy=options.policy
                )
            )
        if not _poll(deadline, step, time.sleep):
            break
        request = api.publish_request(request["id"])
    state = request.get("state")
    code = GATE_EXIT.get(str(state), EXIT_INCOMPLETE)
    decision = request.get("decision") or {}
    verdict = decision.get("verdict") or {}
    lines = [f"publish request {request['id']}: {state}"]
    if decision.get("first_failing_gate"):
        failing = decision["first_failing_gate"]
        label = next(
            (g.get("label") for g in decision.get("gates") or [] if g.get("name") == failing), None
        )
        lines.append(f"first failing gate: {label or failing}")
    undecided = UNDECIDED.get(str(verdict.get("outcome")))
    if state == "blocked" and undecided:
        # Blocked for want of evidence (trials in error, results unscored) or with an interval
        # straddling a threshold: no decision, never a failure (`sherlock evaluate`'s exit 2).
        code = EXIT_INCOMPLETE
        reasons = "; ".join(r.get("detail", "") for r in verdict.get("reasons") or [])
        lines.append(f"{undecided[0]}: {reasons or undecided[1]}")
    elif code == EXIT_INCOMPLETE:
        lines.append(f"no decision within {options.wait:g} s")
    return GateResult(request=request, exit_code=code, lines=lines, runs=results)


def publication(api: Client, version: dict[str, Any]) -> dict[str, Any]:
    """`GET /versions/{id}/publication/`; from a server without it, the same read from the
    version's state and its publish requests (the one published, its decision or bypass)."""
    try:
        return dict(api.publication(version["id"]))
    except ApiError as exc:
        if exc.status != 404 or exc.field:
            raise
    published = version.get("state") == "published"
    found: dict[str, Any] = {
        "published": published,
        "state": version.get("state"),
        "published_at": None,
        "published_by": None,
        "decision": None,
        "bypass": None,
    }
    if not published:
        return found
    requests = [
        r for r in api.publish_requests(agent_version=version["id"]) if r.get("published_at")
    ]
    if requests:
        request = max(requests, key=lambda r: r["published_at"])
        found.update(published_at=request["published_at"], published_by=request["published_by"])
        used = [b for b in request.get("bypasses") or [] if b.get("used_at")]
        if used:
            bypass = used[-1]
            found["bypass"] = {
                "id": bypass["id"],
                "reason": bypass.get("reason"),
                "approved_by": bypass.get("approved_by"),
            }
        else:
            release = (request.get("decision") or {}).get("release")
            outcome = {"pass": "passed", "fail": "blocked"}.get(str(release), request.get("state"))
            found["decision"] = {"id": request["id"], "outcome": outcome}
    return found


def version_name(
    version: str | None, metadata: dict[str, Any] | None = None, entrypoint: str | None = None
) -> str:
    """`version` as given, else the name `sherlock run` gives by default (the task's entrypoint
    at the commit), so `gate` and `verify` find the version a run of the same job made."""
    if version:
        return version
    if not entrypoint:
        raise ConfigError("name the version with --version, or the task with --task")
    found = source.collect() if metadata is None else metadata
    name = source.default_version_name(found, entrypoint)
    if not name:
        raise ConfigError("not in a git repository: name the version with --version")
    return name


def verify(
    api: Client, *, agent: str, version: str | None, task: str | None = None
) -> tuple[int, list[str]]:
    """`sherlock verify`: 0 only when the version is published, with who published it and on
    which decision or bypass; 1 otherwise. Without `version`, the one `sherlock run --task
    task` names by default at this commit."""
    version = version_name(version, entrypoint=task)
    found = api.version(agent, version)
    state = publication(api, found)
    if not state.get("published"):
        return EXIT_FAILED, [f"{agent} {version} is not published (state {state.get('state')})"]
    lines = [
        f"{agent} {version} is published: by {state.get('published_by')} at "
        f"{state.get('published_at')}"
    ]
    decision = state.get("decision")
    bypass = state.get("bypass")
    if bypass:
        lines.append(
            f"on bypass {bypass.get('id')} approved by {bypass.get('approved_by')}: "
            f"{bypass.get('reason')}"
        )
    elif decision:
        lines.append(f"on decision {decision.get('id')} ({decision.get('outcome')})")
    return EXIT_PASSED, lines


def fetch_attestation(
    api: Client, *, agent: str, version: str | None, task: str | None, output: Path
) -> tuple[int, list[str]]:
    """`sherlock attestation`: the newest attestation of the version going live (a publication
    or a rollback) written to `output`, for `sherlock verify --attestation` to check with a
    pinned key; 1 when it has none."""
    version = version_name(version, entrypoint=task)
    found = api.version(agent, version)
    live = [a for a in api.attestations(found["id"]) if a.get("event") in ("publish", "rollback")]
    if not live:
        return EXIT_FAILED, [f"{agent} {version} has no attestation of a release"]
    output.write_text(json.dumps(live[0]["envelope"], indent=2), encoding="utf-8")
    return EXIT_PASSED, [f"{agent} {version}: attestation {live[0]['id']} written to {output}"]


__all__ = [
    "EXIT_ERROR",
    "ConfigError",
    "GateResult",
    "RunOptions",
    "evaluate_remote",
    "fetch_attestation",
    "gate",
    "run",
    "verify",
]
