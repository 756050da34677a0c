"""What an attestation says: an in-toto Statement v1 whose subject is the agent version (its name
and the SHA-256 of its canonical configuration) and whose predicate (`PREDICATE_TYPE`, version
1) records the release event and everything it rested on. The fields: docs/attestations.md,
"The predicate"."""

import hashlib
import json
from typing import Any

from django.conf import settings
from django.utils import timezone

from evaluations.cases_io import case_dicts
from evaluations.checks.rubrics import RUBRICS
from evaluations.models import DatasetVersion, Run
from governance.models import AuditEntry

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://sherlock.dev/attestations/release/v1"


def canonical(value: Any) -> bytes:
    """The bytes that are hashed and signed: sorted keys, no spaces, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str).encode()


def sha256(value: Any) -> str:
    return hashlib.sha256(canonical(value)).hexdigest()


def dataset_digest(dataset_version: DatasetVersion) -> str:
    """The SHA-256 of a dataset version's cases (as exported) and checks (each one's version
    hash, by label): what the gate runs were judged against."""
    checks = {check.label: check.version_hash for check in dataset_version.checks.all()}
    return sha256({"cases": case_dicts(dataset_version), "checks": checks})


def _rubrics() -> dict[str, dict[str, Any]]:
    """The judge's pinned prompts: each rubric's version and the hash of what it sends."""
    return {
        rubric.id: {
            "version": rubric.version,
            "sha256": sha256([rubric.system, rubric.template, rubric.schema]),
        }
        for rubric in RUBRICS.values()
    }


def _who(user: Any) -> str | None:
    return user.get_username() if user is not None else None


def _bypass(bypass: Any) -> dict[str, Any] | None:
    if bypass is None:
        return None
    return {
        "id": bypass.pk,
        "reason": bypass.reason,
        "requestedBy": _who(bypass.requested_by),
        "approvedBy": _who(bypass.approved_by),
        "expiresAt": bypass.expires_at.isoformat(),
    }


def _gate(request: Any) -> dict[str, Any]:
    """The decision, policy, datasets and gate runs of the publish request a release rests on."""
    if request is None:
        return {"decision": None, "policy": None, "datasets": [], "gateRuns": []}
    decision = request.decision or {}
    runs = list(
        Run.objects.filter(pk__in=[run["id"] for run in decision.get("runs", [])])
        .select_related("dataset_version__dataset")
        .order_by("pk")
    )
    datasets = {run.dataset_version_id: run.dataset_version for run in runs}
    judge_models = {run.pk: run.comparability.get("judge_models", []) for run in runs}
    return {
        "decision": {
            "publishRequest": request.pk,
            "state": request.state,
            "decidedAt": decision.get("decided_at"),
            "release": decision.get("release"),
            "outcome": (decision.get("verdict") or {}).get("outcome"),
            "firstFailingGate": decision.get("first_failing_gate"),
            "gates": decision.get("gates", []),
            "measures": decision.get("measures"),
        },
        "policy": decision.get("policy"),
        "datasets": [
            {
                "dataset": version.dataset.slug,
                "version": version.number,
                "id": version.pk,
                "sha256": dataset_digest(version),
            }
            for version in datasets.values()
        ],
        "gateRuns": [
            {**stored, "judgeModels": judge_models.get(stored["id"], [])}
            for stored in decision.get("runs", [])
        ],
    }


def release_statement(
    *, event: str, version: Any, actor: Any, request: Any = None, bypass: Any = None, **extra: Any
) -> dict[str, Any]:
    """The statement of `event` ("publish", "rollback", "retire") on `version` by `actor`,
    resting on the publish `request` (and `bypass`) when it went live; `extra` adds to the
    predicate (`replacedBy` for a version a publication retired). Read in the action's
    transaction, after its audit entries, so the audit head it names includes them."""
    head = AuditEntry.objects.order_by("-sequence").values("sequence", "hash").first()
    agent = version.agent
    predicate = {
        "predicateVersion": 1,
        "event": event,
        "issuedAt": timezone.now().isoformat(),
        "actor": _who(actor),
        "agent": {"slug": agent.slug, "name": agent.name},
        "version": {
            "id": version.pk,
            "number": version.number,
            "adapter": version.adapter,
            "configHash": version.config_hash,
        },
        **_gate(request),
        "bypass": _bypass(bypass),
        "judge": {
            "baseUrl": settings.SHERLOCK_JUDGE_BASE_URL or None,
            "model": settings.SHERLOCK_JUDGE_MODEL,
            "rubrics": _rubrics(),
        },
        "auditHead": head,
        **extra,
    }
    return {
        "_type": STATEMENT_TYPE,
        "subject": [
            {
                "name": f"{agent.slug}@v{version.number}",
                "digest": {"sha256": version.config_hash},
            }
        ],
        "predicateType": PREDICATE_TYPE,
        "predicate": predicate,
    }
