"""Serializers of the agents API. Inputs and outputs are kept apart: an input names what the
caller may set, the action decides, and the output shows the row as stored."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents.choices import Adapter
from agents.models import Agent, AgentVersion


class AgentSerializer(serializers.ModelSerializer):
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True)
    live_version = serializers.PrimaryKeyRelatedField(read_only=True)

    class Meta:
        model = Agent
        fields = ["id", "slug", "name", "description", "owner", "live_version", "created_at"]
        read_only_fields = fields


class AgentInputSerializer(serializers.Serializer):
    slug = serializers.SlugField(max_length=100)
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")


class AgentVersionSerializer(serializers.ModelSerializer):
    agent = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    is_live = serializers.SerializerMethodField()

    class Meta:
        model = AgentVersion
        fields = [
            "id",
            "agent",
            "number",
            "state",
            "is_live",
            "adapter",
            "config",
            "config_hash",
            "notes",
            "created_by",
            "created_at",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.BooleanField())
    def get_is_live(self, obj):
        return obj.agent.live_version_id == obj.pk


@extend_schema_field(serializers.SlugField())
class VisibleAgentField(serializers.SlugRelatedField):
    """An agent named by slug, among those the caller may see (others do not exist for them)."""

    def get_queryset(self):
        return Agent.objects.for_user(self.context["request"].user, "view")


class AgentVersionInputSerializer(serializers.Serializer):
    agent = VisibleAgentField(slug_field="slug")
    adapter = serializers.ChoiceField(choices=Adapter.choices)
    config = serializers.JSONField()
    notes = serializers.CharField(required=False, allow_blank=True, default="")
