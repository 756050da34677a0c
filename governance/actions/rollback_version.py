"""RollBackVersion: publish an earlier, retired version again, through the same gate."""

from agents.choices import VersionState
from governance.actions.publish_version import PublishVersion
from sherlock.core.errors import ActionConflict


class RollBackVersion(PublishVersion):
    """Make a retired version live again (Publisher). It goes through the same gate as a first
    publication: its own, fresh publish request under the policy in force
    must have passed, or be blocked and bypassed. A decision from the version's first release is
    not reused: the policy and the gate datasets may have moved since."""

    verb = "rollback"
    from_state = VersionState.RETIRED

    def check_state(self, version):
        if version.state == VersionState.PUBLISHED:
            raise ActionConflict("This version is already published.", code="already_published")
        if version.state != VersionState.RETIRED:
            raise ActionConflict(
                "Only a retired version can be rolled back to; publish a draft instead.",
                code="not_retired",
            )
