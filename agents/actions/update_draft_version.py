"""UpdateDraftVersion: a Builder changes a draft version's notes, adapter, config or tools.

The admin's change form and `PATCH /api/v1/versions/{id}/` both change a version here, so the
tool policy (tools offered, tools denied) is never a bare many-to-many save: it is checked
(Builder role on the agent; config, tools and denied tools frozen once the version left draft
or has a run) and audited (`agents.version.update`, before and after) like the config.

The version row is locked before the check reads it, so a change and what freezes the version
are serialized: a state change updates that row, and a run inserted for it takes a key lock on
it (its foreign key), so an update that lost the race sees the committed state or run and is
refused instead of changing a frozen version.
"""

from agents.actions._tools import check_tools_of
from agents.actions.create_draft_version import tool_names
from agents.adapters import validate_config
from agents.models import AgentVersion
from sherlock.core.actions import Action
from sherlock.core.egress import EgressRefused
from sherlock.core.errors import ActionConflict, ActionDenied, ActionInvalid, ActionRefused
from sherlock.core.limits import CONFIG_MAX_BYTES, NOTE_MAX, check_document, check_text
from sherlock.core.permissions import user_can

_UNSET = object()


class UpdateDraftVersion(Action):
    """Change what is given (`adapter`, `config`, `notes`, `tools`, `denied_tools`) of
    `version`; what is not given stays. Notes may change on any version; the rest only on an
    unfrozen draft."""

    noun = "version"
    verb = "update"

    def __init__(
        self,
        *,
        acting_user,
        version,
        adapter=_UNSET,
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
                ("adapter", adapter),
                ("config", config),
                ("notes", notes),
                ("tools", tools),
                ("denied_tools", denied_tools),
            )
            if value is not _UNSET
        }

    def lock(self):
        self.version = AgentVersion.objects.select_for_update().get(pk=self.version.pk)

    def check_limits(self):
        if "notes" in self.changes:
            check_text("notes", self.changes["notes"], NOTE_MAX)
        if "config" in self.changes:
            check_document("config", self.changes["config"], CONFIG_MAX_BYTES)

    def _governed_changes(self):
        current = {
            "adapter": self.version.adapter,
            "config": self.version.config,
            **tool_names(self.version),
        }
        changed = []
        for name in ("adapter", "config", "tools", "denied_tools"):
            if name not in self.changes:
                continue
            value = self.changes[name]
            if name in ("tools", "denied_tools"):
                value = sorted(tool.name for tool in value)
            if value != current[name]:
                changed.append(name)
        return changed

    def check(self):
        if not user_can(self.acting_user, "build", self.version.agent):
            raise ActionDenied("You may not change versions of this agent (Builder role needed).")
        check_tools_of(
            self.version.agent,
            **{
                name: self.changes[name]
                for name in ("tools", "denied_tools")
                if name in self.changes
            },
        )
        governed = self._governed_changes()
        if governed and self.version.is_frozen:
            raise ActionConflict(
                f"{self.version} is frozen (it left draft or has a run): its {governed[0]} "
                "cannot change; create a new draft instead.",
                code="version_frozen",
            )
        if "adapter" in self.changes or "config" in self.changes:
            adapter = self.changes.get("adapter", self.version.adapter)
            try:
                validate_config(adapter, self.changes.get("config", self.version.config))
            except EgressRefused as exc:  # audited: naming a secret or a host is evidence
                raise ActionRefused(str(exc), field="config") from None
            except ValueError as exc:
                raise ActionInvalid(str(exc), field="config") from None

    def snapshot(self):
        version = self.version
        return {
            "adapter": version.adapter,
            "config_hash": version.config_hash,
            "notes": version.notes,
            **tool_names(version),
        }

    def perform(self):
        version = self.version
        before = self.snapshot()
        fields = [name for name in ("adapter", "config", "notes") if name in self.changes]
        for name in fields:
            setattr(version, name, self.changes[name])
        if fields:
            # config_hash covers the adapter too (the model adds it only for `config`).
            version.save(update_fields=[*fields, "config_hash"])
        for name in ("tools", "denied_tools"):
            if name in self.changes:
                getattr(version, name).set(self.changes[name])
        after = self.snapshot()
        if after != before:
            self.audit(
                target=version,
                before=before,
                after=after,
            )
        return version
