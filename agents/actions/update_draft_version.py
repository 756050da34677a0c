"""UpdateDraftVersion: a Builder changes a draft version's notes, config or tools.

The admin's change form and `PATCH /api/v1/versions/{id}/` both change a version here, so the
tool policy (tools offered, tools denied) is never a bare many-to-many save: it is checked
(Builder role on the agent; config, tools and denied tools frozen once the version left draft
or has a run) and audited (`agents.version.update`, before and after) like the config.
"""

from agents.actions.create_draft_version import tool_names
from agents.adapters import validate_config
from sherlock.core.actions import Action
from sherlock.core.audit import audit
from sherlock.core.errors import ActionConflict, ActionDenied, ActionInvalid
from sherlock.core.permissions import user_can

_UNSET = object()


class UpdateDraftVersion(Action):
    """Change what is given (`config`, `notes`, `tools`, `denied_tools`) of `version`; what is
    not given stays. Notes may change on any version; the rest only on an unfrozen draft."""

    def __init__(
        self,
        *,
        acting_user,
        version,
        config=_UNSET,
        notes=_UNSET,
        tools=_UNSET,
        denied_tools=_UNSET,
    ):
        super().__init__(acting_user=acting_user)
        self.version = version
        self.changes = {
            name: value
            for name, value in (
                ("config", config),
                ("notes", notes),
                ("tools", tools),
                ("denied_tools", denied_tools),
            )
            if value is not _UNSET
        }

    def _governed_changes(self):
        current = {"config": self.version.config, **tool_names(self.version)}
        changed = []
        for name in ("config", "tools", "denied_tools"):
            if name not in self.changes:
                continue
            value = self.changes[name]
            if name != "config":
                value = sorted(tool.name for tool in value)
            if value != current[name]:
                changed.append(name)
        return changed

    def check(self):
        if not user_can(self.acting_user, "build", self.version.agent):
            raise ActionDenied("You may not change versions of this agent (Builder role needed).")
        governed = self._governed_changes()
        if governed and self.version.is_frozen:
            raise ActionConflict(
                f"{self.version} is frozen (it left draft or has a run): its {governed[0]} "
                "cannot change; create a new draft instead.",
                code="version_frozen",
            )
        if "config" in self.changes:
            try:
                validate_config(self.version.adapter, self.changes["config"])
            except ValueError as exc:
                raise ActionInvalid(str(exc), field="config") from None

    def perform(self):
        version = self.version
        before = {"config_hash": version.config_hash, "notes": version.notes, **tool_names(version)}
        fields = [name for name in ("config", "notes") if name in self.changes]
        for name in fields:
            setattr(version, name, self.changes[name])
        if fields:
            version.save(update_fields=fields)
        for name in ("tools", "denied_tools"):
            if name in self.changes:
                getattr(version, name).set(self.changes[name])
        after = {"config_hash": version.config_hash, "notes": version.notes, **tool_names(version)}
        if after != before:
            audit(
                "agents.version.update",
                actor=self.acting_user,
                target=version,
                before=before,
                after=after,
            )
        return version
