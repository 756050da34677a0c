"""Serializers of the governance API: outputs show rows as stored (the decision snapshot in
full), inputs carry only what a verb needs (a reason)."""

from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents.models import Agent
from evaluations.models import Dataset
from governance.actions.create_api_key import NAME_MAX_LENGTH as KEY_NAME_MAX_LENGTH
from governance.actions.policy_fields import POLICY_FIELDS
from governance.audit.export import FIELDS as AUDIT_FIELDS
from governance.choices import APIKeyState, Role
from governance.models import (
    APIKey,
    Attestation,
    AuditEntry,
    Bypass,
    GateDataset,
    PublishingPolicy,
    PublishRequest,
)
from sherlock.core.api.serializers import LeanRepresentation, RefuseUnknownFields
from sherlock.core.limits import REASON_MAX


class ReasonInputSerializer(RefuseUnknownFields, serializers.Serializer):
    reason = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=REASON_MAX
    )


class RequestPublicationInputSerializer(RefuseUnknownFields, serializers.Serializer):
    supersede = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        min_value=1,
        help_text="The id of the version's open decision (a passed or blocked publish request "
        "still current) that asking again throws away; without it such a request is refused "
        "(409 `already_decided`). A request other than the open one is refused "
        "(409 `supersede_mismatch`).",
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


class AuditEntrySerializer(LeanRepresentation, serializers.ModelSerializer):
    actor = serializers.CharField(source="actor_repr")

    class Meta:
        model = AuditEntry
        # The export's fields, in its order; the API names the actor by username only.
        fields = [
            "actor" if name == "actor_repr" else name for name in AUDIT_FIELDS if name != "actor_id"
        ]
        read_only_fields = fields


# --- Administration: policies and role grants (Admin) -----------------------------------------


def slug_of(model, slug_field="slug", **kwargs):
    """A reference by slug (or username) whose error names the kind of object, never echoing
    the input back."""
    noun = model._meta.verbose_name
    return serializers.SlugRelatedField(
        slug_field=slug_field,
        queryset=model.objects.all(),
        error_messages={
            "does_not_exist": f"No {noun} with this {slug_field}.",
            "invalid": f"Not a valid {noun} {slug_field}.",
        },
        **kwargs,
    )


class PolicySerializer(serializers.ModelSerializer):
    """One version of a policy as stored; `in_force` says whether it is its scope's newest."""

    scope = serializers.CharField(source="scope_key", read_only=True)
    agent = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    gate_datasets = serializers.SlugRelatedField(slug_field="slug", many=True, read_only=True)
    created_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    in_force = serializers.SerializerMethodField()

    class Meta:
        model = PublishingPolicy
        fields = [
            "id",
            "scope",
            "agent",
            "version",
            "in_force",
            *POLICY_FIELDS,
            "gate_datasets",
            "created_by",
            "created_at",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.BooleanField())
    def get_in_force(self, obj):
        newest = getattr(obj, "newest_version", None)
        if newest is None:
            newest = PublishingPolicy.objects.current(obj.scope_key).version
        return obj.version == newest


class PolicyRulesSerializer(RefuseUnknownFields, serializers.ModelSerializer):
    """The rules of a policy as input (types, bounds and lengths from the model); the policy
    actions validate them again on the row they write."""

    gate_datasets = slug_of(
        Dataset, many=True, required=False, help_text="Slugs of the datasets the gate runs."
    )

    class Meta:
        model = PublishingPolicy
        fields = [*POLICY_FIELDS, "gate_datasets"]


class PolicyCreateSerializer(PolicyRulesSerializer):
    agent = slug_of(
        Agent,
        required=False,
        allow_null=True,
        help_text="The agent this policy governs; omitted or null for the global policy.",
    )

    class Meta(PolicyRulesSerializer.Meta):
        fields = ["agent", *PolicyRulesSerializer.Meta.fields]


class PolicyChangeSerializer(PolicyRulesSerializer):
    """Only the rules that change (the others are copied from the version in force)."""

    reason = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=REASON_MAX
    )

    class Meta(PolicyRulesSerializer.Meta):
        fields = [*PolicyRulesSerializer.Meta.fields, "reason"]
        extra_kwargs = {name: {"required": False} for name in POLICY_FIELDS}


class GateDatasetChoiceSerializer(serializers.ModelSerializer):
    dataset = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    chosen_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = GateDataset
        fields = ["dataset", "chosen_by", "chosen_at"]
        read_only_fields = fields


GATE_SOURCES = {
    "agent_policy": "the agent's own publishing policy names gate datasets: they win",
    "chosen": "the datasets an Admin chose for the agent",
    "none": "none is chosen: the agent cannot request publication",
}


class GateDatasetsSerializer(serializers.Serializer):
    """An agent's gate datasets: the Admin's choice (`datasets`, with who chose each and when),
    and what its next publish request runs (`gated_on`, from `source`)."""

    agent = serializers.CharField(help_text="The agent's slug.")
    datasets = serializers.ListField(
        child=serializers.CharField(),
        help_text="Slugs of the datasets chosen for the agent (what `PUT` sets).",
    )
    chosen = GateDatasetChoiceSerializer(many=True)
    gated_on = serializers.ListField(
        child=serializers.CharField(),
        help_text="Slugs of the datasets the agent's next publish request runs.",
    )
    hidden = serializers.IntegerField(
        help_text="Gate datasets (chosen or run) that you may not see: counted, not named."
    )
    source = serializers.ChoiceField(
        choices=list(GATE_SOURCES.items()),
        help_text="Where `gated_on` comes from: "
        + "; ".join(f"`{key}`: {text}" for key, text in GATE_SOURCES.items()),
    )


class GateDatasetsInputSerializer(RefuseUnknownFields, serializers.Serializer):
    datasets = slug_of(
        Dataset,
        many=True,
        help_text="Slugs of the datasets that gate the agent, replacing the choice; [] drops it.",
    )


class RoleGrantSerializer(serializers.Serializer):
    """One role granted to one user, globally or on one agent or dataset: a grant record
    (`RoleGrant`), never a role inferred from the permissions held. Who granted it, when and
    why are on the admin's Role grants page and in the audit log."""

    user = serializers.CharField(help_text="Username.")
    role = serializers.ChoiceField(choices=Role.choices)
    scope = serializers.ChoiceField(choices=["global", "agent", "dataset"])
    agent = serializers.CharField(allow_null=True, help_text="The agent's slug (scope agent).")
    dataset = serializers.CharField(
        allow_null=True, help_text="The dataset's slug (scope dataset)."
    )


class RoleGrantInputSerializer(RefuseUnknownFields, serializers.Serializer):
    """Grant or revoke `role` for `user`: globally, or for the one agent or dataset named."""

    user = slug_of(get_user_model(), slug_field="username")
    role = serializers.ChoiceField(choices=Role.choices)
    agent = slug_of(Agent, required=False, allow_null=True, help_text="Only this agent.")
    dataset = slug_of(Dataset, required=False, allow_null=True, help_text="Only this dataset.")
    reason = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=REASON_MAX
    )

    def validate(self, attrs):
        if attrs.get("agent") and attrs.get("dataset"):
            raise serializers.ValidationError({"dataset": "Name an agent or a dataset, not both."})
        return attrs


# --- API keys ---------------------------------------------------------------------------------


class APIKeySerializer(serializers.ModelSerializer):
    """A key as listed: never its secret (which is not stored), nor its hash."""

    user = serializers.SlugRelatedField(slug_field="username", read_only=True)
    issued_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    revoked_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    expires_at = serializers.DateTimeField(source="expiry_date", read_only=True)
    state = serializers.ChoiceField(choices=APIKeyState.choices, read_only=True)

    class Meta:
        model = APIKey
        fields = [
            "prefix",
            "name",
            "user",
            "state",
            "created",
            "expires_at",
            "last_used_at",
            "issued_by",
            "revoked",
            "revoked_at",
            "revoked_by",
        ]
        read_only_fields = fields


class APIKeyCreatedSerializer(APIKeySerializer):
    key = serializers.CharField(
        read_only=True,
        help_text="The key itself, for `Authorization: Token <key>`: shown this once, "
        "stored only as a hash.",
    )

    class Meta(APIKeySerializer.Meta):
        fields = [*APIKeySerializer.Meta.fields, "key"]
        read_only_fields = fields


class APIKeyInputSerializer(RefuseUnknownFields, serializers.Serializer):
    name = serializers.CharField(
        max_length=KEY_NAME_MAX_LENGTH, help_text="What or who will use the key."
    )
    days = serializers.IntegerField(
        required=False,
        min_value=1,
        help_text="Days until it expires: SHERLOCK_API_KEY_DAYS when omitted, at most "
        "SHERLOCK_API_KEY_MAX_DAYS.",
    )


class PublicationDecisionSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="The publish request whose decision published it.")
    outcome = serializers.ChoiceField(choices=["pass", "fail"], help_text="Its release verdict.")


class PublicationBypassSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    reason = serializers.CharField()
    approved_by = serializers.CharField(allow_null=True)


class PublicationSerializer(serializers.Serializer):
    """`GET /versions/{id}/publication/`: whether the version is published, by whom, on what."""

    published = serializers.BooleanField()
    state = serializers.CharField(help_text="The version's state: draft, published, retired.")
    is_live = serializers.BooleanField()
    published_at = serializers.DateTimeField(allow_null=True)
    published_by = serializers.CharField(allow_null=True)
    publish_request = serializers.IntegerField(allow_null=True)
    decision = PublicationDecisionSerializer(allow_null=True)
    bypass = PublicationBypassSerializer(allow_null=True)


class AttestationSerializer(serializers.ModelSerializer):
    """A release attestation as issued: the DSSE envelope (docs/attestations.md)."""

    envelope = serializers.JSONField(
        help_text="The DSSE envelope: payloadType, payload (the in-toto statement, base64) and "
        "signatures ({keyid, sig})."
    )

    class Meta:
        model = Attestation
        fields = ["id", "event", "created_at", "keyid", "digest", "envelope"]
        read_only_fields = fields
