"""Role grants, administered by global Admins."""

from django.contrib.auth import get_user_model
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from governance.actions.grant_role import GrantRole
from governance.actions.revoke_role import RevokeRole
from governance.api.serializers import (
    RoleGrantInputSerializer,
    RoleGrantSerializer,
)
from governance.models import (
    RoleGrant,
)
from governance.people.roles import describe_grant, is_global_admin, role_grants
from sherlock.core.api.errors import refusals


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
    queryset = RoleGrant.objects.none()  # listed through governance.people.roles.role_grants

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
