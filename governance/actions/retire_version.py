"""RetireVersion: take the live version out of service without a replacement."""

from agents.choices import VERSION_STATES, VersionState
from agents.models import Agent, AgentVersion
from governance.actions.base import GovernanceAction
from governance.models import PublishRequest
from sherlock.core.errors import ActionConflict, ActionDenied
from sherlock.core.permissions import user_can


class RetireVersion(GovernanceAction):
    """Retire a published version (Publisher); the agent then has no live version until one
    is published or rolled back to. Publishing a new version retires the old one by itself,
    so this verb is for withdrawing a version that must stop serving."""

    noun = "version"
    verb = "retire"

    def __init__(self, *, acting_user, agent_version, reason=""):
        super().__init__(acting_user=acting_user)
        self.agent_version = agent_version
        self.reason = reason

    def refusal_target(self):
        return self.agent_version

    def lock(self):
        self.agent = Agent.objects.select_for_update().get(pk=self.agent_version.agent_id)
        self.agent_version = AgentVersion.objects.select_related("agent").get(
            pk=self.agent_version.pk
        )

    def check(self):
        if not user_can(self.acting_user, "publish", self.agent_version.agent):
            raise ActionDenied("You may not retire versions of this agent (Publisher role needed).")
        if self.agent_version.state != VersionState.PUBLISHED:
            raise ActionConflict(
                f"Only a published version can be retired; this one is {self.agent_version.state}.",
                code="not_published",
            )

    def perform(self):
        version = self.agent_version
        if not VERSION_STATES.move(version, VersionState.RETIRED):
            raise ActionConflict("The version changed state meanwhile.", code="conflict")
        was_live = self.agent.live_version_id == version.pk
        if was_live:
            Agent.objects.filter(pk=self.agent.pk).update(live_version=None)
        self.audit(
            target=version,
            before={"state": VersionState.PUBLISHED, "live": was_live},
            after={"state": VersionState.RETIRED, "live": False},
            reason=self.reason,
        )
        version.state = VersionState.RETIRED
        self.attest(
            "retire",
            version,
            request=PublishRequest.objects.published_for(version),
            reason=self.reason,
        )
        return version
