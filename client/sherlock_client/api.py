"""Typed calls over Sherlock's API (`/api/v1/`, docs/api.md and docs/client.md): datasets and
their cases, agents and versions, runs, trials, publish requests, the verdict and a version's
publication. One method per endpoint, answering the API's JSON as the TypedDicts below say;
what a method does not know about (a field added later) is kept, not dropped.

The client computes no result itself: pass, fail and incomplete come from the server's verdict
(`GET /runs/{id}/verdict/`), the same function the pages use.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, NotRequired, TypedDict, cast

from sherlock_client.http import ApiError, Session

# At most this many items per upload (the server's bound, docs/client.md).
UPLOAD_MAX_ITEMS = 500


class WorkItem(TypedDict):
    key: str  # "<case_version_id>:<repetition>", the same on every resume
    case: str
    case_version: int
    repetition: int
    input: Any
    context: dict[str, Any]


class ClientRun(TypedDict):
    id: int
    url: str
    status: str
    dataset_version: int
    repetitions: int
    work_url: NotRequired[str]
    upload_url: NotRequired[str]
    finish_url: NotRequired[str]


class UploadAnswer(TypedDict):
    accepted: int
    duplicates: int
    remaining: int


class Verdict(TypedDict):
    run: int
    url: str
    status: str
    outcome: str  # passed | failed | incomplete | pending
    exit_code: int | None
    policy: dict[str, Any] | None
    reasons: list[dict[str, Any]]
    gates: list[dict[str, Any]]
    cases: dict[str, Any]
    missing: list[dict[str, Any]]


class Publication(TypedDict):
    published: bool
    state: str
    published_at: str | None
    published_by: str | None
    decision: NotRequired[dict[str, Any] | None]
    bypass: NotRequired[dict[str, Any] | None]


class Client:
    """Sherlock's API for one key. `Client(url, key)`; `with Client(...) as api:` closes it."""

    def __init__(self, base_url: str, api_key: str, **session_options: Any) -> None:
        self.session = Session(base_url, api_key, **session_options)

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- datasets and cases ----------------------------------------------------------------

    def datasets(self) -> Iterator[dict[str, Any]]:
        return self.session.paginate("datasets/")

    def dataset(self, slug: str) -> dict[str, Any]:
        """The dataset by slug; ApiError `not_found` when there is none you may see."""
        for found in self.session.paginate("datasets/", slug=slug):
            if found.get("slug") == slug:
                return found
        raise ApiError(
            f"no dataset '{slug}' (or you may not see it)",
            status=404,
            code="not_found",
            field="dataset",
        )

    def dataset_versions(self, dataset_id: int) -> list[dict[str, Any]]:
        return list(self.session.paginate("dataset-versions/", dataset=dataset_id))

    def latest_frozen_version(self, slug: str) -> dict[str, Any]:
        dataset = self.dataset(slug)
        frozen = [v for v in self.dataset_versions(dataset["id"]) if v.get("frozen_at")]
        if not frozen:
            raise ApiError(
                f"dataset '{slug}' has no frozen version",
                status=409,
                code="conflict",
                field="dataset",
            )
        return max(frozen, key=lambda v: v["number"])

    def cases(self, dataset_version_id: int) -> Iterator[dict[str, Any]]:
        return self.session.paginate("cases/", dataset_version=dataset_version_id)

    # --- agents and versions ---------------------------------------------------------------

    def agent(self, slug: str) -> dict[str, Any]:
        found = [a for a in self.session.paginate("agents/") if a.get("slug") == slug]
        if not found:
            raise ApiError(
                f"no agent '{slug}' (or you may not see it)",
                status=404,
                code="not_found",
                field="agent",
            )
        return found[0]

    def versions(self, agent: str) -> list[dict[str, Any]]:
        return list(self.session.paginate("versions/", agent=agent))

    def version(self, agent: str, name: str) -> dict[str, Any]:
        """The agent's version named `name`; `v<number>` (`v3`) names one by its number when no
        version has that very name. A bare number is a name, never a number: `10` is the
        version named "10"."""
        versions = self.versions(agent)
        for found in versions:
            if str(found.get("name")) == name:
                return found
        match = re.fullmatch(r"v(\d+)", name)
        number = match.group(1) if match else None
        for found in versions if number else ():
            if str(found.get("number")) == number:
                return found
        hint = "" if match or not name.isdigit() else f" (version number {name} is v{name})"
        raise ApiError(
            f"agent '{agent}' has no version named '{name}'{hint}",
            status=404,
            code="not_found",
            field="version",
        )

    def ensure_version(
        self, agent: str, name: str, config: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Find the agent's `client` version named `name`, or create it (200 found, 201
        created; 409 `conflict` when a version of that name differs)."""
        body = {"agent": agent, "name": name, "adapter": "client", "config": config or {}}
        return cast(dict[str, Any], self.session.post("versions/ensure/", body, idempotent=True))

    # --- runs ------------------------------------------------------------------------------

    def runs(self, **filters: Any) -> Iterator[dict[str, Any]]:
        return self.session.paginate("runs/", **filters)

    def run(self, run_id: int) -> dict[str, Any]:
        return cast(dict[str, Any], self.session.get(f"runs/{run_id}/"))

    def start_run(
        self, agent_version: int, dataset_version: int, repetitions: int = 1
    ) -> dict[str, Any]:
        """A run Sherlock executes itself (the existing `POST /runs/`)."""
        body = {
            "agent_version": agent_version,
            "dataset_version": dataset_version,
            "repetitions": repetitions,
        }
        return cast(dict[str, Any], self.session.post("runs/", body))

    def create_client_run(
        self,
        *,
        agent: str,
        version: str,
        dataset: str,
        repetitions: int = 1,
        purpose: str = "manual",
        publish_request: int | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> ClientRun:
        body: dict[str, Any] = {
            "agent": agent,
            "version": version,
            "dataset": dataset,
            "repetitions": repetitions,
            "purpose": purpose,
            "metadata": metadata or {},
        }
        if publish_request is not None:
            body["publish_request"] = publish_request
        return cast(ClientRun, self.session.post("runs/client/", body))

    def work(self, run_id: int, *, all: bool = False) -> Iterator[WorkItem]:
        """The run's work items not yet uploaded (`all`: the done ones too)."""
        # The work list's rows are WorkItems (the server's documented shape).
        return self.session.paginate(  # type: ignore[return-value]
            f"runs/{run_id}/work/", all=1 if all else None, page_size=UPLOAD_MAX_ITEMS
        )

    def upload(self, run_id: int, items: list[dict[str, Any]]) -> UploadAnswer:
        """One batch of transcripts or error items (idempotent: a key already stored counts
        as a duplicate)."""
        if len(items) > UPLOAD_MAX_ITEMS:
            raise ValueError(f"at most {UPLOAD_MAX_ITEMS} items per upload")
        return cast(
            UploadAnswer,
            self.session.post(f"runs/{run_id}/transcripts/", {"items": items}, idempotent=True),
        )

    def finish(self, run_id: int) -> dict[str, Any]:
        return cast(dict[str, Any], self.session.post(f"runs/{run_id}/finish/", idempotent=True))

    def cancel(self, run_id: int) -> dict[str, Any]:
        return cast(dict[str, Any], self.session.post(f"runs/{run_id}/cancel/", idempotent=True))

    def verdict(self, run_id: int, policy: int | None = None, wait: float | None = None) -> Verdict:
        """The run's verdict; `wait` seconds: the server holds its answer while the run is
        unfinished, up to that long (its own limit applies; a server before long polls answers
        at once)."""
        held = round(wait, 1) if wait else None
        return cast(Verdict, self.session.get(f"runs/{run_id}/verdict/", policy=policy, wait=held))

    def junit(self, run_id: int, policy: int | None = None) -> str:
        """The run's JUnit XML as the server writes it (one writer for every surface)."""
        params = {"policy": policy} if policy is not None else None
        return str(self.session.request("GET", f"runs/{run_id}/junit/", params=params, text=True))

    def trials(self, run_id: int) -> Iterator[dict[str, Any]]:
        return self.session.paginate("trials/", run=run_id)

    def case_results(self, run_id: int) -> Iterator[dict[str, Any]]:
        """A finished run's cases as the server judged them: passed, flaky, repetitions."""
        return self.session.paginate("case-results/", run=run_id)

    def compare(self, a: int, b: int) -> dict[str, Any]:
        return cast(dict[str, Any], self.session.get("runs/compare/", a=a, b=b))

    # --- publishing ------------------------------------------------------------------------

    def publish_requests(self, **filters: Any) -> Iterator[dict[str, Any]]:
        return self.session.paginate("publish-requests/", **filters)

    def publish_request(self, request_id: int) -> dict[str, Any]:
        return cast(dict[str, Any], self.session.get(f"publish-requests/{request_id}/"))

    def request_publication(self, version_id: int, supersede: int | None = None) -> dict[str, Any]:
        body = {"supersede": supersede} if supersede is not None else {}
        return cast(
            dict[str, Any], self.session.post(f"versions/{version_id}/request-publication/", body)
        )

    def publication(self, version_id: int) -> Publication:
        return cast(Publication, self.session.get(f"versions/{version_id}/publication/"))

    def attestations(self, version_id: int) -> list[dict[str, Any]]:
        """The version's signed release attestations, newest first (docs/attestations.md)."""
        return cast(list[dict[str, Any]], self.session.get(f"versions/{version_id}/attestations/"))
