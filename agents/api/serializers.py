"""Serializers of the agents API. Inputs and outputs are kept apart: an input names what the
caller may set, the action decides, and the output shows the row as stored."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents.choices import Adapter
from agents.models import Agent, AgentVersion, Tool
from sherlock.core.api.serializers import RefuseUnknownFields
from sherlock.core.hidden import VisibleSlugRelatedField
from sherlock.core.limits import (
    CONFIG_MAX_BYTES,
    DESCRIPTION_MAX,
    JSON_MAX_DEPTH,
    NAME_MAX,
    NOTE_MAX,
    SLUG_MAX,
    VERSION_NAME_MAX,
    excerpt,
)

CONFIG_HELP = (
    f"The adapter's config (docs/adapters.md): at most {CONFIG_MAX_BYTES} bytes of JSON, "
    f"{JSON_MAX_DEPTH} levels deep."
)


class AgentSerializer(serializers.ModelSerializer):
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    live_version = serializers.PrimaryKeyRelatedField(read_only=True, allow_null=True)

    class Meta:
        model = Agent
        fields = ["id", "slug", "name", "description", "owner", "live_version", "created_at"]
        read_only_fields = fields


class AgentInputSerializer(RefuseUnknownFields, serializers.Serializer):
    slug = serializers.SlugField(max_length=SLUG_MAX)
    name = serializers.CharField(max_length=NAME_MAX)
    description = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=DESCRIPTION_MAX
    )


class AgentVersionSerializer(serializers.ModelSerializer):
    agent = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    created_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    is_live = serializers.SerializerMethodField()
    tools = serializers.SlugRelatedField(slug_field="name", many=True, read_only=True)
    denied_tools = serializers.SlugRelatedField(slug_field="name", many=True, read_only=True)

    class Meta:
        model = AgentVersion
        fields = [
            "id",
            "agent",
            "number",
            "name",
            "state",
            "is_live",
            "adapter",
            "config",
            "config_hash",
            "tools",
            "denied_tools",
            "notes",
            "created_by",
            "created_at",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.BooleanField())
    def get_is_live(self, obj):
        return obj.agent.live_version_id == obj.pk


@extend_schema_field(serializers.CharField(help_text="The agent's slug, or its id."))
class VisibleAgentField(VisibleSlugRelatedField):
    """An agent named by slug (or id), among those the caller may see (others do not exist for
    them, and naming one is audited: `sherlock.core.hidden`)."""

    default_error_messages = {
        **VisibleSlugRelatedField.default_error_messages,
        # The words an unknown dataset gets, not DRF's "Object with slug=... does not exist."
        "does_not_exist": "no agent '{value}' (or you may not see it)",
    }

    def get_queryset(self):
        return Agent.objects.for_user(self.context["request"].user, "view")

    def to_internal_value(self, data):
        # Its id is accepted too (the `sherlock` client may hold either, docs/client.md), when
        # no agent the caller sees has that slug: a slug of digits is still found first.
        text = str(data) if isinstance(data, int) and not isinstance(data, bool) else data
        if isinstance(text, str) and text.isascii() and text.isdigit() and len(text) < 19:
            visible = self.get_queryset()
            if not visible.filter(slug=text).exists():
                found = visible.filter(pk=int(text)).first()
                if found is not None:
                    return found
        return super().to_internal_value(data)


def tool_names_field(help_text):
    """Tools named by `Tool.name`: the version's agent's own tool of that name, else the shared
    one (`Tool.objects.named`); an unknown name is refused naming it (a typo would otherwise
    leave a tool unoffered, or a high-impact tool undenied)."""
    return serializers.ListField(child=serializers.CharField(), required=False, help_text=help_text)


class ToolPolicyFields(RefuseUnknownFields, serializers.Serializer):
    """`tools` and `denied_tools` by name, resolved for the version's agent: the `agent` field
    (a new version) or the `agent` of the serializer's context (a draft being changed)."""

    tools = tool_names_field("Tools offered to the agent, by name.")
    denied_tools = tool_names_field("High-impact tools this version's policy refuses, by name.")

    def validate(self, attrs):
        agent = attrs.get("agent") or self.context.get("agent")
        for name in ("tools", "denied_tools"):
            if name not in attrs:
                continue
            names = attrs[name]
            repeated = sorted({n for n in names if names.count(n) > 1})
            if repeated:
                raise serializers.ValidationError({name: f"{excerpt(repeated[0])} is listed twice"})
            found = Tool.objects.named(agent.pk, names) if agent is not None else {}
            unknown = [n for n in names if n not in found]
            if unknown:
                owner = f" for {agent.slug}" if agent is not None else ""
                raise serializers.ValidationError(
                    {
                        name: f"no tool named {excerpt(unknown[0])}{owner}: register it for the "
                        "agent (Builder), or ask an Admin to share one"
                    },
                    code="does_not_exist",
                )
            attrs[name] = [found[n] for n in names]
        return attrs


class AgentVersionInputSerializer(ToolPolicyFields):
    agent = VisibleAgentField(slug_field="slug")
    name = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=VERSION_NAME_MAX,
        help_text="A name unique per agent (a git commit, a tag); the client finds versions by it.",
    )
    adapter = serializers.ChoiceField(choices=Adapter.choices)
    config = serializers.JSONField(help_text=CONFIG_HELP)
    notes = serializers.CharField(required=False, allow_blank=True, default="", max_length=NOTE_MAX)


class AgentVersionUpdateSerializer(ToolPolicyFields):
    """What `PATCH` may change on a draft; fields left out stay as they are."""

    config = serializers.JSONField(required=False, help_text=CONFIG_HELP)
    notes = serializers.CharField(required=False, allow_blank=True, max_length=NOTE_MAX)
