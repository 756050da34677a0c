"""The governance API: the publishing verbs on versions, publish requests with their decision,
bypasses, the audit log, the administration of policies and role grants (global Admins), and
each user's API keys. Every verb calls its action and nothing else; the exception handler
(`sherlock.core.api`) turns a refusal into 403 (role) or 409 (state), with the reason. Objects come
from `for_user`, so a user who may not see one gets 404 before any action is tried."""

import datetime as dt

import django_filters
from django.db.models import F, OuterRef, Prefetch, Subquery
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.pagination import CursorPagination
from rest_framework.response import Response

from agents.api.serializers import AgentVersionSerializer
from agents.models import Agent, AgentVersion
from governance.actions.approve_bypass import ApproveBypass
from governance.actions.create_api_key import CreateAPIKey
from governance.actions.create_policy import CreatePolicy
from governance.actions.deny_bypass import DenyBypass
from governance.actions.grant_role import GrantRole
from governance.actions.publish_version import PublishVersion
from governance.actions.request_bypass import RequestBypass
from governance.actions.request_publication import RequestPublication
from governance.actions.retire_version import RetireVersion
from governance.actions.revoke_api_key import RevokeAPIKey
from governance.actions.revoke_bypass import RevokeBypass
from governance.actions.revoke_role import RevokeRole
from governance.actions.rollback_version import RollBackVersion
from governance.actions.set_gate_datasets import SetGateDatasets
from governance.actions.update_policy import UpdatePolicy
from governance.api.serializers import (
    APIKeyCreatedSerializer,
    APIKeyInputSerializer,
    APIKeySerializer,
    AuditEntrySerializer,
    BypassInputSerializer,
    BypassSerializer,
    GateDatasetsInputSerializer,
    GateDatasetsSerializer,
    PolicyChangeSerializer,
    PolicyCreateSerializer,
    PolicySerializer,
    PublicationSerializer,
    PublishRequestSerializer,
    ReasonInputSerializer,
    RequestPublicationInputSerializer,
    RoleGrantInputSerializer,
    RoleGrantSerializer,
)
from governance.choices import BypassState, RequestState
from governance.models import (
    APIKey,
    AuditEntry,
    Bypass,
    GateDataset,
    PublishingPolicy,
    PublishRequest,
    RoleGrant,
    gate_datasets_for,
)
from governance.publication import publication_of
from governance.roles import describe_grant, is_global_admin, role_grants
from sherlock.core.api.errors import refusals
from sherlock.core.permissions import user_can

REFUSED = refusals(400, 403, 404, 409, s400="Invalid input (e.g. a thin reason).")


def publish_requests():
    return PublishRequest.objects.select_related(
        "agent_version__agent", "policy", "requested_by", "published_by"
    ).prefetch_related(
        "runs",
        Prefetch(
            "bypasses",
            queryset=Bypass.objects.select_related("requested_by", "approved_by").order_by("pk"),
        ),
    )


class VersionVerbViewSet(viewsets.GenericViewSet):
    """The publishing verbs of `/versions/{id}/` (the version itself is `agents.api`)."""

    serializer_class = AgentVersionSerializer
    queryset = AgentVersion.objects.none()

    def get_queryset(self):
        return AgentVersion.objects.for_user(self.request.user, "view").select_related(
            "agent", "created_by"
        )

    @extend_schema(
        summary="Request publication: start the gate runs (Builder)",
        description="Starts one gate run per gate dataset of the policy in force, on its latest "
        "frozen version. Asking again while a decision is still current (passed and waiting "
        "for a Publisher, or blocked) supersedes it and pays for new runs, so it must name "
        "that request: `supersede`.",
        request=RequestPublicationInputSerializer,
        responses={201: PublishRequestSerializer, **REFUSED},
    )
    @action(detail=True, methods=["post"], url_path="request-publication")
    def request_publication(self, request, pk=None):
        version = self.get_object()
        data = RequestPublicationInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        created = RequestPublication(
            acting_user=request.user,
            agent_version=version,
            supersede=data.validated_data["supersede"],
        ).execute()
        body = PublishRequestSerializer(publish_requests().get(pk=created.pk)).data
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Whether this version is published, by whom, on which decision or bypass",
        description="For `sherlock verify` (docs/client.md), the deploy step's guard: "
        "`published` is true when the version's state is `published`. `published_at`, "
        "`published_by` and `decision` (`{id, outcome}`: the publish request that published "
        "it and its release verdict, `pass` or `fail`) come from its newest request that was "
        "published; `bypass` (`{id, reason, approved_by}`) is set when a bypass cleared the "
        "gate. All null when it was never published.",
        responses={200: PublicationSerializer, **refusals(404)},
    )
    @action(detail=True, methods=["get"])
    def publication(self, request, pk=None):
        version = self.get_object()
        return Response(PublicationSerializer(publication_of(version)).data)

    def _verb(self, request, action_class):
        version = self.get_object()
        data = ReasonInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        action_class(
            acting_user=request.user, agent_version=version, reason=data.validated_data["reason"]
        ).execute()
        return Response(AgentVersionSerializer(self.get_queryset().get(pk=version.pk)).data)

    @extend_schema(
        summary="Publish a version whose gate passed, or was bypassed (Publisher)",
        request=ReasonInputSerializer,
        responses={200: AgentVersionSerializer, **REFUSED},
    )
    @action(detail=True, methods=["post"])
    def publish(self, request, pk=None):
        return self._verb(request, PublishVersion)

    @extend_schema(
        summary="Retire the live version (Publisher)",
        request=ReasonInputSerializer,
        responses={200: AgentVersionSerializer, **REFUSED},
    )
    @action(detail=True, methods=["post"])
    def retire(self, request, pk=None):
        return self._verb(request, RetireVersion)

    @extend_schema(
        summary="Roll back to a retired version, through the same gate (Publisher)",
        request=ReasonInputSerializer,
        responses={200: AgentVersionSerializer, **REFUSED},
    )
    @action(detail=True, methods=["post"])
    def rollback(self, request, pk=None):
        return self._verb(request, RollBackVersion)


class PublishRequestFilter(django_filters.FilterSet):
    agent = django_filters.CharFilter(field_name="agent_version__agent__slug")
    state = django_filters.ChoiceFilter(choices=RequestState.choices)

    class Meta:
        model = PublishRequest
        fields = ["agent", "agent_version", "state"]


@extend_schema_view(
    list=extend_schema(summary="Publish requests you may see"),
    retrieve=extend_schema(summary="One publish request with its decision (every gate)"),
)
class PublishRequestViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    serializer_class = PublishRequestSerializer
    filterset_class = PublishRequestFilter
    queryset = PublishRequest.objects.none()

    def get_queryset(self):
        return publish_requests().filter(
            pk__in=PublishRequest.objects.for_user(self.request.user, "view").values("pk")
        )

    @extend_schema(
        summary="Bypass the blocked decision, with a reason (Admin)",
        request=BypassInputSerializer,
        responses={201: BypassSerializer, **REFUSED},
    )
    @action(detail=True, methods=["post"])
    def bypass(self, request, pk=None):
        publish_request = self.get_object()
        data = BypassInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        bypass = RequestBypass(
            acting_user=request.user,
            publish_request=publish_request,
            reason=data.validated_data["reason"],
        ).execute()
        body = BypassSerializer(Bypass.objects.get(pk=bypass.pk)).data
        return Response(body, status=status.HTTP_201_CREATED)


class BypassFilter(django_filters.FilterSet):
    state = django_filters.ChoiceFilter(choices=BypassState.choices)

    class Meta:
        model = Bypass
        fields = ["publish_request", "state"]


@extend_schema_view(
    list=extend_schema(summary="Bypasses you may see"),
    retrieve=extend_schema(summary="One bypass"),
)
class BypassViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = BypassSerializer
    filterset_class = BypassFilter
    queryset = Bypass.objects.none()

    def get_queryset(self):
        return Bypass.objects.for_user(self.request.user, "view").select_related(
            "requested_by", "approved_by"
        )

    def _verb(self, request, action_class):
        bypass = self.get_object()
        data = ReasonInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        action_class(
            acting_user=request.user, bypass=bypass, reason=data.validated_data["reason"]
        ).execute()
        return Response(BypassSerializer(self.get_queryset().get(pk=bypass.pk)).data)

    @extend_schema(
        summary="Approve a requested bypass (a second, different Admin)",
        request=ReasonInputSerializer,
        responses={200: BypassSerializer, **REFUSED},
    )
    @action(detail=True, methods=["post"])
    def approve(self, request, pk=None):
        return self._verb(request, ApproveBypass)

    @extend_schema(
        summary="Deny a requested bypass (Admin)",
        request=ReasonInputSerializer,
        responses={200: BypassSerializer, **REFUSED},
    )
    @action(detail=True, methods=["post"])
    def deny(self, request, pk=None):
        return self._verb(request, DenyBypass)

    @extend_schema(
        summary="Revoke a bypass before it is used (Admin)",
        request=ReasonInputSerializer,
        responses={200: BypassSerializer, **REFUSED},
    )
    @action(detail=True, methods=["post"])
    def revoke(self, request, pk=None):
        return self._verb(request, RevokeBypass)


class CanReadAuditLog(permissions.BasePermission):
    """The audit log is for Admins: the global `view_auditentry` permission."""

    message = "Only an Admin may read the audit log."

    def has_permission(self, request, view):
        return bool(request.user and request.user.has_perm("governance.view_auditentry"))


class UTCDateTimeFilter(django_filters.IsoDateTimeFilter):
    """An ISO 8601 time, compared in UTC: ISO allows offsets up to 23:59, which PostgreSQL
    refuses beyond 15:59 (a DataError, a 500), so the offset is applied here."""

    def filter(self, qs, value):
        return super().filter(qs, value.astimezone(dt.UTC) if value else value)


class AuditFilter(django_filters.FilterSet):
    actor = django_filters.CharFilter(field_name="actor_repr", help_text="Username of the actor.")
    action = django_filters.CharFilter(help_text="Exact action code, e.g. governance.bypass.use.")
    action_prefix = django_filters.CharFilter(
        field_name="action", lookup_expr="startswith", help_text="e.g. governance.bypass."
    )
    target_type = django_filters.CharFilter(help_text="e.g. agents.agentversion.")
    target_id = django_filters.CharFilter()
    since = UTCDateTimeFilter(field_name="at", lookup_expr="gte")
    until = UTCDateTimeFilter(field_name="at", lookup_expr="lte")

    class Meta:
        model = AuditEntry
        fields = ["actor", "action", "action_prefix", "target_type", "target_id", "since", "until"]


class AuditCursorPagination(CursorPagination):
    """Newest first by sequence, paged by a cursor (`next`, `previous`): the log only grows, so
    a page costs the same at any depth and no COUNT of the whole log is made per request."""

    ordering = "-sequence"


@extend_schema_view(
    list=extend_schema(summary="The audit log, newest first (Admin)"),
    retrieve=extend_schema(summary="One audit entry by sequence (Admin)"),
)
class AuditEntryViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = AuditEntrySerializer
    filterset_class = AuditFilter
    permission_classes = [permissions.IsAuthenticated, CanReadAuditLog]
    lookup_field = "sequence"
    pagination_class = AuditCursorPagination
    queryset = AuditEntry.objects.order_by("-sequence")


# --- Administration: publishing policies ------------------------------------------------------


def policies():
    newest = (
        PublishingPolicy.objects.filter(scope_key=OuterRef("scope_key"))
        .order_by("-version")
        .values("version")[:1]
    )
    return (
        PublishingPolicy.objects.select_related("agent", "created_by")
        .prefetch_related("gate_datasets")
        .annotate(newest_version=Subquery(newest))
        .order_by("scope_key", "-version")
    )


class CanReadPolicies(permissions.BasePermission):
    """Every global role reads the policies (`view_publishingpolicy`, as in the admin); the
    verbs are left to the policy actions, which allow global Admins only and audit refusals."""

    message = "Your role does not allow reading publishing policies."

    def has_permission(self, request, view):
        if request.method not in permissions.SAFE_METHODS:
            return True
        return request.user.has_perm("governance.view_publishingpolicy")


class PolicyFilter(django_filters.FilterSet):
    scope = django_filters.CharFilter(field_name="scope_key", help_text="`global` or `agent:<id>`.")
    agent = django_filters.CharFilter(field_name="agent__slug", help_text="The agent's slug.")
    in_force = django_filters.BooleanFilter(
        method="filter_in_force", help_text="Only the version in force of each scope (true)."
    )

    class Meta:
        model = PublishingPolicy
        fields = ["scope", "agent", "in_force"]

    def filter_in_force(self, queryset, name, value):
        in_force = queryset.filter(version=F("newest_version"))
        return in_force if value else queryset.exclude(version=F("newest_version"))


POLICY_REFUSED = refusals(
    400,
    403,
    409,
    s400="Invalid rules (the field is named).",
    s409="Stale version, or the scope already has a policy.",
)


@extend_schema_view(
    list=extend_schema(summary="Publishing policies, every version (any global role)"),
    retrieve=extend_schema(summary="One version of a publishing policy (any global role)"),
)
class PolicyViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Policies are versioned: `create` writes version 1 of a scope, `change` the next version
    (the row changed is never edited), both through the policy actions, global Admins only."""

    serializer_class = PolicySerializer
    filterset_class = PolicyFilter
    permission_classes = [permissions.IsAuthenticated, CanReadPolicies]
    queryset = PublishingPolicy.objects.none()

    def get_queryset(self):
        return policies()

    def _answer(self, policy, status_code):
        return Response(PolicySerializer(policies().get(pk=policy.pk)).data, status=status_code)

    @extend_schema(
        summary="Create the first version of a scope's policy (Admin)",
        request=PolicyCreateSerializer,
        responses={201: PolicySerializer, **POLICY_REFUSED},
    )
    def create(self, request):
        CreatePolicy(acting_user=request.user).authorize()
        data = PolicyCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        agent = fields.pop("agent", None)
        datasets = fields.pop("gate_datasets", [])
        policy = CreatePolicy(
            acting_user=request.user, agent=agent, gate_datasets=datasets, **fields
        ).execute()
        return self._answer(policy, status.HTTP_201_CREATED)

    @extend_schema(
        summary="Change a policy: writes its next version (Admin)",
        request=PolicyChangeSerializer,
        responses={201: PolicySerializer, **POLICY_REFUSED, **refusals(404)},
    )
    @action(detail=True, methods=["post"])
    def change(self, request, pk=None):
        policy = self.get_object()
        UpdatePolicy(acting_user=request.user, policy=policy).authorize()
        data = PolicyChangeSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        changes = dict(data.validated_data)
        reason = changes.pop("reason", "")
        datasets = changes.pop("gate_datasets", None)
        new = UpdatePolicy(
            acting_user=request.user,
            policy=policy,
            changes=changes,
            gate_datasets=datasets,
            reason=reason,
        ).execute()
        return self._answer(new, status.HTTP_201_CREATED)


# --- Administration: gate datasets -------------------------------------------------------------


def gate_datasets_of(agent, user):
    """The body of `GET /agents/{slug}/gate-datasets/` (`GateDatasetsSerializer`): the Admin's
    choice for `agent` and what its next publish request runs, under the policy in force, as
    `user` may see it. One rule names a dataset on every surface (docs/governance.md, "Who
    reads a dataset's name"): whoever may see an agent reads the names of the datasets it is
    gated on, as its runs, its publish page and the run picker name them; anyone else reads
    only the datasets they hold a role on, and the rest is counted (`hidden`)."""
    from evaluations.models import Dataset

    chosen = list(
        GateDataset.objects.filter(agent=agent)
        .select_related("dataset", "chosen_by")
        .order_by("dataset__slug")
    )
    policy = PublishingPolicy.objects.in_force_for(agent)
    gated = list(gate_datasets_for(agent, policy).values_list("pk", "slug"))
    named = {row.dataset_id for row in chosen} | {pk for pk, _ in gated}
    if user_can(user, "view", agent):
        visible = named
    else:
        visible = set(
            Dataset.objects.for_user(user).filter(pk__in=named).values_list("pk", flat=True)
        )
    own = policy is not None and policy.agent_id == agent.pk and policy.gate_datasets.exists()
    return {
        "agent": agent.slug,
        "datasets": [row.dataset.slug for row in chosen if row.dataset_id in visible],
        "chosen": [row for row in chosen if row.dataset_id in visible],
        "gated_on": [slug for pk, slug in gated if pk in visible],
        "hidden": len(named - visible),
        "source": "agent_policy" if own else "chosen" if chosen else "none",
    }


class AgentGateDatasetsViewSet(viewsets.GenericViewSet):
    """`/agents/{slug}/gate-datasets/` (the agent itself is `agents.api`): which datasets gate
    the agent's releases. Whoever may see the agent reads them; only a global Admin sets them,
    through `SetGateDatasets` (audited as `governance.gate_datasets.set`, a refusal as
    `governance.gate_datasets.refused`), as in *Admin › Gate datasets*."""

    serializer_class = GateDatasetsSerializer
    queryset = Agent.objects.none()
    lookup_field = "slug"
    lookup_value_regex = "[-a-zA-Z0-9_]+"

    def get_queryset(self):
        return Agent.objects.for_user(self.request.user, "view")

    @extend_schema(
        methods=["GET"],
        summary="An agent's gate datasets: chosen, and what its next request runs",
        description="`datasets`: the slugs an Admin chose for the agent (`chosen`: who and "
        "when); `gated_on`: what the agent's next publish request runs, its own policy's gate "
        "datasets when that names some (`source` `agent_policy`), else the chosen ones "
        "(`chosen`), else none (`none`: requesting publication is refused, 409 "
        "`no_gate_datasets`).",
        responses={200: GateDatasetsSerializer, **refusals(404)},
    )
    @extend_schema(
        methods=["PUT"],
        summary="Set an agent's gate datasets (Admin)",
        description="Replaces the choice with `datasets` (slugs; `[]` drops every one) through "
        "`SetGateDatasets`, audited with the slugs before and after. Only a global Admin: "
        "anyone else is answered 403 before the body is read. A request already evaluating "
        "keeps its runs; the next one uses the new choice.",
        request=GateDatasetsInputSerializer,
        responses={200: GateDatasetsSerializer, **refusals(400, 403, 404)},
    )
    @action(detail=True, methods=["get", "put"], url_path="gate-datasets")
    def gate_datasets(self, request, slug=None):
        agent = self.get_object()
        if request.method == "PUT":
            SetGateDatasets(acting_user=request.user, agent=agent, datasets=[]).authorize()
            data = GateDatasetsInputSerializer(data=request.data)
            data.is_valid(raise_exception=True)
            SetGateDatasets(
                acting_user=request.user, agent=agent, datasets=data.validated_data["datasets"]
            ).execute()
        return Response(GateDatasetsSerializer(gate_datasets_of(agent, request.user)).data)


# --- Administration: role grants --------------------------------------------------------------


class IsGlobalAdmin(permissions.BasePermission):
    message = "Only an Admin may read role grants."

    def has_permission(self, request, view):
        return is_global_admin(request.user)


ROLE_REFUSED = refusals(
    400, 403, 409, s409="The user already holds the role (grant), or does not (revoke)."
)


class RoleGrantViewSet(viewsets.GenericViewSet):
    """Role grants (`RoleGrant` records), global or on one agent or dataset; granted and
    revoked by `GrantRole` and `RevokeRole`, the same actions as the admin's Roles page, global
    Admins only, audited. A revocation answers the grant it removed; revoking a role not
    granted there is 409 `not_held`."""

    serializer_class = RoleGrantSerializer
    queryset = RoleGrant.objects.none()  # listed through governance.roles.role_grants

    def get_permissions(self):
        if self.action == "list":
            return [permissions.IsAuthenticated(), IsGlobalAdmin()]
        return [permissions.IsAuthenticated()]

    @extend_schema(
        summary="Every role grant, global and per object (Admin)",
        parameters=[OpenApiParameter("user", str, description="Only this username's grants.")],
        responses={200: RoleGrantSerializer(many=True), **refusals(403)},
    )
    def list(self, request):
        from django.contrib.auth import get_user_model

        username = request.query_params.get("user")
        user = None
        if username:
            user = get_user_model().objects.filter(username=username[:150]).first()
            if user is None:
                return self.get_paginated_response(self.paginate_queryset([]))
        page = self.paginate_queryset(role_grants(user))
        return self.get_paginated_response(RoleGrantSerializer(page, many=True).data)

    def _verb(self, request, verb_class):
        verb_class(acting_user=request.user, user=None, role="").authorize()
        data = RoleGrantInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        grant = verb_class(
            acting_user=request.user,
            user=values["user"],
            role=values["role"],
            obj=values.get("agent") or values.get("dataset"),
            reason=values["reason"],
        ).execute()
        return RoleGrantSerializer(describe_grant(grant)).data

    @extend_schema(
        summary="Grant a role, globally or for one agent or dataset (Admin)",
        request=RoleGrantInputSerializer,
        responses={201: RoleGrantSerializer, **ROLE_REFUSED},
    )
    def create(self, request):
        return Response(self._verb(request, GrantRole), status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Revoke a role, globally or for one agent or dataset (Admin)",
        description="Deletes the grant and answers it as it was; the user keeps only what their "
        "other grants give. 409 `not_held` when the role is not granted there.",
        request=RoleGrantInputSerializer,
        responses={200: RoleGrantSerializer, **ROLE_REFUSED},
    )
    @action(detail=False, methods=["post"])
    def revoke(self, request):
        return Response(self._verb(request, RevokeRole))


# --- API keys ---------------------------------------------------------------------------------


class APIKeyFilter(django_filters.FilterSet):
    user = django_filters.CharFilter(field_name="user__username", help_text="Username (Admin).")

    class Meta:
        model = APIKey
        fields = ["user", "revoked"]


@extend_schema_view(
    list=extend_schema(summary="Your API keys (an Admin: everyone's), never their secret"),
    retrieve=extend_schema(summary="One API key, by its prefix"),
)
class APIKeyViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """A user's own keys: issue one (the secret is in that answer only), list them with when
    each was last used, revoke one. A global Admin sees and revokes everyone's."""

    serializer_class = APIKeySerializer
    filterset_class = APIKeyFilter
    lookup_field = "prefix"
    queryset = APIKey.objects.none()

    def get_queryset(self):
        keys = APIKey.objects.select_related("user", "issued_by", "revoked_by")
        if is_global_admin(self.request.user):
            return keys
        return keys.filter(user=self.request.user)

    @extend_schema(
        summary="Issue yourself an API key: its secret is shown in this answer only",
        request=APIKeyInputSerializer,
        responses={201: APIKeyCreatedSerializer, **refusals(400)},
    )
    def create(self, request):
        data = APIKeyInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        api_key, secret = CreateAPIKey(
            acting_user=request.user,
            user=request.user,
            name=data.validated_data["name"],
            days=data.validated_data.get("days"),
        ).execute()
        api_key.key = secret
        return Response(APIKeyCreatedSerializer(api_key).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Revoke an API key (its owner, or an Admin)",
        request=ReasonInputSerializer,
        responses={200: APIKeySerializer, **refusals(400, 403, 404, 409)},
    )
    @action(detail=True, methods=["post"])
    def revoke(self, request, prefix=None):
        api_key = self.get_object()
        data = ReasonInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        revoked = RevokeAPIKey(
            acting_user=request.user, api_key=api_key, reason=data.validated_data["reason"]
        ).execute()
        return Response(APIKeySerializer(revoked).data)
