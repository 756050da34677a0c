"""The thresholds a run's contract is shown under: the publishing policy's, through one hook.

The run page, compare, its API and `manage.py evaluate` show a run under the thresholds of the
publishing policy that would govern publishing its agent now (the agent's own newest policy,
else the global one), so that no surface reads PASS where the publish gate would fail, and
they say which (`AppliedThresholds.source`: "thresholds of policy «name» v3", or "the default
thresholds: no publishing policy applies").

Policies live in governance, which evaluations may not import, so the policy comes through a
provider hook: `GovernanceConfig.ready` registers `in_force_thresholds`
(`register_thresholds_provider`, which returns the previous one, so a test can swap it) and
`applied_thresholds(agents)` asks it. A registered function rather than a setting naming a
callable: the call is plain and import-checked in the app that owns the policies, and the
dependency points the way the layers allow. Without a provider every agent gets the defaults.

A provider takes a list of agents and returns, in a constant number of queries, `{agent pk:
AppliedThresholds}` for the agents a policy governs; one left out gets `DEFAULT_APPLIED`. It
hands over plain `Thresholds` made by the same `policy_thresholds` the release decision
applies, so the pages and the gate cannot read a policy two ways.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from evaluations.contract.inputs import DEFAULT_THRESHOLDS, THRESHOLD_FIELDS, Thresholds

DEFAULTS_SOURCE = "the default thresholds: no publishing policy applies"


@dataclass(frozen=True)
class AppliedThresholds:
    """Thresholds and where they come from: a publishing policy (its id, name, version and
    scope, ``"agent"`` for the agent's own or ``"global"``), or the default thresholds (no
    policy: ``policy_id`` is None)."""

    thresholds: Thresholds
    policy_id: int | None = None
    policy_name: str = ""
    policy_version: int | None = None
    scope: str = ""
    # The policy's own gate beside the contract's (``evaluations.verdict``); without a policy
    # every case must pass.
    min_case_pass_rate: float = 1.0
    # Whether that gate decides on the rate ("point") or on its interval at this confidence
    # ("interval": pass, fail or insufficient evidence, `evaluations.stats`).
    case_pass_rate_decides_on: str = "point"
    case_pass_rate_confidence: float = 0.95
    # The non-inferiority gate against the live version (`evaluations.verdict.paired`): the
    # most the candidate's paired pass rate may fall below live's; None: no such gate.
    max_regression: float | None = None
    # The contract's floors decided on their point estimate or their Wilson interval.
    floors_decide_on: str = "point"
    # ((check label, minimum), ...): model checks whose pass rate the gate reads corrected for
    # the judge's error by the run's sample labels (`evaluations.verdict.corrected`).
    corrected_checks: tuple[tuple[str, float], ...] = ()

    @property
    def source(self) -> str:
        """What the page says: "thresholds of policy «name» v3", or the defaults' sentence."""
        if self.policy_id is None:
            return DEFAULTS_SOURCE
        return f"thresholds of policy «{self.policy_name}» v{self.policy_version}"

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape of the API: ``source``, ``policy`` (``{id, name, version, scope}`` or
        null) and ``values`` (the ``THRESHOLD_FIELDS``, decimals as strings)."""
        policy = None
        if self.policy_id is not None:
            policy = {
                "id": self.policy_id,
                "name": self.policy_name,
                "version": self.policy_version,
                "scope": self.scope,
            }
        values = {}
        for name in THRESHOLD_FIELDS:
            value = getattr(self.thresholds, name)
            values[name] = str(value) if isinstance(value, Decimal) else value
        return {"source": self.source, "policy": policy, "values": values}


DEFAULT_APPLIED = AppliedThresholds(DEFAULT_THRESHOLDS)

Provider = Callable[[Sequence[Any]], Mapping[int, AppliedThresholds]]
_provider: Provider | None = None


def register_thresholds_provider(provider: Provider | None) -> Provider | None:
    """Install ``provider`` (None removes it) and return the one it replaces.

    Governance calls this once, in ``GovernanceConfig.ready``; a test may install its own and
    put the previous one back."""
    global _provider
    previous, _provider = _provider, provider
    return previous


def thresholds_provider() -> Provider | None:
    """The provider installed, or None."""
    return _provider


def applied_thresholds(agents: Iterable[Any]) -> dict[int, AppliedThresholds]:
    """``{agent pk: AppliedThresholds}`` for each of ``agents``: the provider's, else the
    default thresholds. One call to the provider, whatever the number of agents."""
    agents = list({agent.pk: agent for agent in agents}.values())
    found = _provider(agents) if _provider is not None and agents else {}
    return {agent.pk: found.get(agent.pk, DEFAULT_APPLIED) for agent in agents}


PolicyLookup = Callable[[int], AppliedThresholds | None]
_lookup: PolicyLookup | None = None


def register_policy_lookup(lookup: PolicyLookup | None) -> PolicyLookup | None:
    """Install the function that gives the ``AppliedThresholds`` of a policy by id (None: no
    such policy), for a verdict asked under a named policy (``?policy=<id>``); returns the
    previous one. Governance registers ``governance.publishing.decision.policy_applied_by_id``."""
    global _lookup
    previous, _lookup = _lookup, lookup
    return previous


def policy_by_id(policy_id: int) -> AppliedThresholds | None:
    """The ``AppliedThresholds`` of policy ``policy_id``, or None (no such policy, or no
    governance installed)."""
    return _lookup(policy_id) if _lookup is not None else None


def thresholds_for(agent: Any) -> AppliedThresholds:
    """The ``AppliedThresholds`` of one agent (``applied_thresholds`` of it)."""
    return applied_thresholds([agent])[agent.pk]
