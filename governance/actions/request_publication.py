"""RequestPublication: a Builder asks for a version to go live; the gate runs start."""

from typing import Any

from django.urls import reverse
from django.utils import timezone

from agents.choices import Adapter, VersionState
from agents.models import Agent, AgentVersion
from evaluations.actions.start_run import StartRun
from evaluations.choices import RunPurpose
from evaluations.verdict import gate_label
from evaluations.verdict.paired import live_runs as paired_live_runs
from governance.actions._bypass_state import move_bypass
from governance.actions._request_state import move_request
from governance.actions.base import GovernanceAction
from governance.choices import BYPASS_ACTIVE, REQUEST_DECIDED, BypassState, RequestState
from governance.models import Bypass, PublishingPolicy, PublishRequest, gate_datasets_for
from sherlock.core.errors import ActionConflict, ActionDenied
from sherlock.core.permissions import user_can


class RequestPublication(GovernanceAction):
    """Open a publish request for `agent_version` and start the gate runs of the policy in force
    for its agent: one run per gate dataset chosen for the agent, on its latest frozen version,
    with the policy's repetitions (a `client` version's runs wait for the client). A draft is
    requested by a Builder, a retired version by a Builder or a Publisher (a rollback passes
    the same gate); the decision is made when the runs finish (`governance.receivers`).

    Asking again while an earlier decision is still current throws that decision away, so it
    must be meant: it is refused (`already_decided`) unless the caller names the request it
    supersedes (`supersede`), and refused (`supersede_mismatch`) when that is not the open one.
    The rules in full: docs/governance.md, "Publishing".
    """

    noun = "request"
    verb = "create"

    def __init__(self, *, acting_user, agent_version, supersede=None):
        super().__init__(acting_user=acting_user)
        self.agent_version = agent_version
        self.supersede = supersede
        self.policy: Any = None  # the policy in force, found by check()
        self.datasets = []
        self.open_decision = None

    def refusal_target(self):
        return self.agent_version

    def lock(self):
        # The agent row is the lock every publishing verb takes, so a request cannot interleave
        # with a publish of the same agent.
        Agent.objects.select_for_update().filter(pk=self.agent_version.agent_id).first()
        self.agent_version = AgentVersion.objects.select_related("agent").get(
            pk=self.agent_version.pk
        )

    def check(self):
        version, user = self.agent_version, self.acting_user
        agent = version.agent
        if version.state == VersionState.RETIRED:
            if not (user_can(user, "build", agent) or user_can(user, "publish", agent)):
                raise ActionDenied(
                    "You may not request publication of this agent's versions "
                    "(Builder or Publisher role needed)."
                )
        elif not user_can(user, "build", agent):
            raise ActionDenied(
                "You may not request publication of this agent's versions (Builder role needed)."
            )
        if version.state == VersionState.PUBLISHED:
            raise ActionConflict("This version is already published.", code="already_published")
        self.policy = PublishingPolicy.objects.in_force_for(agent)
        if self.policy is None:
            raise ActionConflict(
                "No publishing policy is in force for this agent; an Admin must create one.",
                code="no_policy",
            )
        self.datasets = []
        chosen = list(gate_datasets_for(agent, self.policy))
        if not chosen:
            raise ActionConflict(self.no_gate_dataset_message(agent), code="no_gate_datasets")
        for dataset in chosen:
            frozen = dataset.latest_frozen
            if frozen is None:
                raise ActionConflict(
                    f"Gate dataset {dataset.slug} has no frozen version to evaluate against.",
                    code="no_frozen_dataset",
                )
            self.datasets.append(frozen)
        if version.publish_requests.filter(state=RequestState.EVALUATING).exists():
            raise ActionConflict(
                "A publish request for this version is already evaluating.",
                code="already_evaluating",
            )
        self.check_open_decision()

    def live_runs(self, runs):
        """Under a policy with a margin of regression, the live version's runs to pair the gate
        `runs` with, one per gate run: its latest completed run on the same dataset version
        (`evaluations.verdict.paired.live_runs`, the rule the run page pairs by), or a run
        started beside the gate runs (the system's, as they are). None without a margin, or
        without a live version other than the one requested."""
        if self.policy.max_regression is None:
            return []
        found = paired_live_runs(runs)
        live = self.agent_version.agent.live_version
        return [
            found[run.pk]
            or StartRun(
                acting_user=None,
                agent_version=live,
                dataset_version=run.dataset_version,
                repetitions=self.policy.repetitions,
                purpose=RunPurpose.GATE,
            ).execute()
            for run in runs
            if run.pk in found
        ]

    def no_gate_dataset_message(self, agent):
        """The refusal for an agent no dataset was chosen for: how to choose one, who may."""
        url = reverse("admin:governance_gatedataset_add") + f"?agent={agent.pk}"
        offered = list(self.policy.gate_datasets.order_by("slug").values_list("slug", flat=True))
        hint = (
            f" The global policy lists {', '.join(offered)}, but a global policy's datasets "
            "gate no agent until they are chosen for it."
            if offered and self.policy.agent_id is None
            else ""
        )
        return (
            f"No gate dataset is chosen for {agent.slug}, so it cannot be gated: an Admin "
            f"chooses one written for it in Admin › Gate datasets ({url}), or in the agent's "
            f"own publishing policy.{hint}"
        )

    def check_open_decision(self):
        """Refuse to throw away a decision still current unless the caller named it
        (`supersede`, the request's id), and a named request that is not the open one."""
        version = self.agent_version
        found = PublishRequest.objects.open_decision_for(version)
        self.open_decision = found
        if self.supersede is not None and (found is None or found.pk != self.supersede):
            now = f"#{found.pk} is" if found else "none is"
            raise ActionConflict(
                f"Publish request #{self.supersede} is not the open decision of this version "
                f"({now}): someone asked again meanwhile; look before asking again.",
                code="supersede_mismatch",
            )
        current = found is not None and found.speaks_for(version, self.policy)
        if current and self.supersede is None:
            if found.state == RequestState.PASSED:
                what = "passed; it waits for a Publisher"
            else:
                failing = gate_label((found.decision or {}).get("first_failing_gate")) or "unknown"
                what = f"was blocked at {failing}; a bypass of it is void once it is superseded"
            raise ActionConflict(
                f"Publish request #{found.pk} {what}. Asking again supersedes it and pays for "
                f"new gate runs: name it to confirm (supersede={found.pk}).",
                code="already_decided",
            )

    def perform(self):
        version, policy = self.agent_version, self.policy
        self._supersede_earlier_requests()
        request = PublishRequest.objects.create(
            agent_version=version,
            requested_by=self.acting_user,
            policy=policy,
            config_hash=version.config_hash,
        )
        # The gate runs are the system's: the requester's right was checked above, and a
        # Builder scoped to this agent need not see the gate datasets.
        # Under a policy whose gate runs stop early, they do, but a client version's: its
        # client makes every call (docs/contract.md, "Stopping early").
        early = policy.gate_runs_stop_early and version.adapter != Adapter.CLIENT
        runs = [
            StartRun(
                acting_user=None,
                agent_version=version,
                dataset_version=dataset_version,
                repetitions=policy.repetitions,
                purpose=RunPurpose.GATE,
                stop_early=early,
            ).execute()
            for dataset_version in self.datasets
        ]
        request.runs.set(runs)
        live = self.live_runs(runs)
        request.live_runs.set(live)
        self.audit(
            target=request,
            after={
                "state": request.state,
                "agent_version": version.pk,
                "version_state": version.state,
                "config_hash": version.config_hash,
                "policy": {"id": policy.pk, "scope": policy.scope_key, "version": policy.version},
                "runs": [run.pk for run in runs],
                "live_runs": [run.pk for run in live],
                "supersedes": self.open_decision.pk if self.open_decision else None,
            },
        )
        return request

    def _supersede_earlier_requests(self):
        earlier = list(self.agent_version.publish_requests.filter(state__in=REQUEST_DECIDED))
        for old in earlier:
            # The agent row is locked (lock()), so no verb can move these meanwhile; the
            # compare-and-set still keeps an entry from describing a change that did not happen.
            if not move_request(old, RequestState.SUPERSEDED):
                continue
            self.audit(
                verb="supersede",
                target=old,
                before={"state": old.state},
                after={"state": RequestState.SUPERSEDED},
                reason="publication was requested again",
            )
            for bypass in Bypass.objects.filter(publish_request=old, state__in=BYPASS_ACTIVE):
                if not move_bypass(bypass, BypassState.REVOKED, decided_at=timezone.now()):
                    continue
                self.audit(
                    noun="bypass",
                    verb="revoke",
                    target=bypass,
                    before={"state": bypass.state},
                    after={"state": BypassState.REVOKED},
                    reason=f"its publish request #{old.pk} was superseded",
                )
