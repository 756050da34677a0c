"""Serializers of the governance API: outputs show rows as stored (the decision snapshot in
full), inputs carry only what a verb needs (a reason)."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from governance.audit_export import FIELDS as AUDIT_FIELDS
from governance.models import AuditEntry, Bypass, PublishingPolicy, PublishRequest
from sherlock.core.api import RefuseUnknownFields
from sherlock.core.limits import REASON_MAX


class ReasonInputSerializer(RefuseUnknownFields, serializers.Serializer):
    reason = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=REASON_MAX
    )


class BypassInputSerializer(RefuseUnknownFields, serializers.Serializer):
    # Not `required`: a missing or thin reason is refused by the action itself, so the refusal
    # is audited like any other (governance.bypass.refused) and answered 400.
    reason = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=REASON_MAX,
        help_text="Why the gate must be bypassed: at least 30 characters of real explanation.",
    )


class PolicyRefSerializer(serializers.ModelSerializer):
    scope = serializers.CharField(source="scope_key")

    class Meta:
        model = PublishingPolicy
        fields = ["id", "name", "scope", "version", "enforcement"]


class RunRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    dataset_version = serializers.IntegerField(source="dataset_version_id")


class BypassSerializer(serializers.ModelSerializer):
    requested_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    approved_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = Bypass
        fields = [
            "id",
            "publish_request",
            "state",
            "reason",
            "requested_by",
            "approved_by",
            "config_hash",
            "expires_at",
            "created_at",
            "decided_at",
            "used_at",
        ]
        read_only_fields = fields


class PublishRequestSerializer(serializers.ModelSerializer):
    agent = serializers.SerializerMethodField()
    version_number = serializers.IntegerField(source="agent_version.number", read_only=True)
    requested_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    published_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    policy = PolicyRefSerializer(read_only=True)
    runs = RunRefSerializer(many=True, read_only=True)
    bypasses = BypassSerializer(many=True, read_only=True)
    decision = serializers.JSONField(
        read_only=True,
        help_text="The decision snapshot: every gate with its numbers, threshold and status, "
        "the first failing gate, the release verdict, the runs and the policy version.",
    )

    class Meta:
        model = PublishRequest
        fields = [
            "id",
            "agent",
            "agent_version",
            "version_number",
            "state",
            "requested_by",
            "policy",
            "config_hash",
            "runs",
            "decision",
            "decided_at",
            "published_at",
            "published_by",
            "bypasses",
            "created_at",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.CharField())
    def get_agent(self, obj):
        return obj.agent_version.agent.slug


class AuditEntrySerializer(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor_repr")

    class Meta:
        model = AuditEntry
        # The export's fields, in its order; the API names the actor by username only.
        fields = [
            "actor" if name == "actor_repr" else name for name in AUDIT_FIELDS if name != "actor_id"
        ]
        read_only_fields = fields
