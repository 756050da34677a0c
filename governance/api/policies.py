"""Publishing policies: listed by who may read them, created and changed by global Admins."""

import django_filters
from django.db.models import F, OuterRef, Subquery
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from governance.actions.create_policy import CreatePolicy
from governance.actions.update_policy import UpdatePolicy
from governance.api.serializers import (
    PolicyChangeSerializer,
    PolicyCreateSerializer,
    PolicySerializer,
)
from governance.models import (
    PublishingPolicy,
)
from sherlock.core.api.errors import refusals


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
