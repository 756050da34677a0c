"""People through the API: the same actions as the People page.

Global Admins list everyone (roles, how they sign in, last sign-in), invite a person (the answer
carries the one-time sign-up link, once) and deactivate or reactivate them; roles are granted
and revoked at `/api/v1/role-grants/`. Anyone else is answered 403 before a body is read, and a
refused change is audited (`governance.user.refused`) like every refusal.
"""

from django.contrib.auth import get_user_model
from django.db.models import Prefetch
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from governance.actions.deactivate_user import DeactivateUser
from governance.actions.invite_user import InviteUser
from governance.actions.reactivate_user import ReactivateUser
from governance.models import RoleGrant
from governance.people.invites import invite_url
from governance.people.roles import is_global_admin
from sherlock.core.api.errors import refusals
from sherlock.core.api.serializers import RefuseUnknownFields
from sherlock.core.inputs import parse_id

User = get_user_model()


class IsPeopleAdmin(permissions.BasePermission):
    message = "Only an Admin manages people."

    def has_permission(self, request, view):
        return is_global_admin(request.user)


class PersonSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    email = serializers.CharField()
    first_name = serializers.CharField()
    last_name = serializers.CharField()
    is_active = serializers.BooleanField()
    last_login = serializers.DateTimeField(allow_null=True)
    sign_in = serializers.SerializerMethodField(
        help_text="`sso:<provider>`, `password`, or `invited` (the link not used yet)."
    )
    roles = serializers.SerializerMethodField()

    def get_sign_in(self, user) -> list[str]:
        accounts = [f"sso:{a.provider}" for a in user.socialaccount_set.all()]
        if user.has_usable_password():
            accounts.append("password")
        return accounts or ["invited"]

    def get_roles(self, user) -> list[dict]:
        return [
            {
                "role": g.role,
                "scope": g.scope,
                "agent": g.agent.slug if g.agent_id else None,
                "dataset": g.dataset.slug if g.dataset_id else None,
                "source": g.source,
            }
            for g in user.role_grants.all()
        ]


class InviteInputSerializer(RefuseUnknownFields, serializers.Serializer):
    username = serializers.CharField(max_length=150)
    email = serializers.EmailField(required=False, allow_blank=True, default="")
    first_name = serializers.CharField(required=False, allow_blank=True, default="", max_length=150)
    last_name = serializers.CharField(required=False, allow_blank=True, default="", max_length=150)


class InvitedSerializer(PersonSerializer):
    invite_url = serializers.CharField(help_text="The one-time sign-up link; shown only here.")


class PeopleViewSet(viewsets.GenericViewSet):
    """Everyone who may sign in, for global Admins; invitations and (de)activation."""

    serializer_class = PersonSerializer

    def get_permissions(self):
        # A refused change is its action's to answer and audit (`authorize`, below); a read is
        # refused here.
        if self.action == "list":
            return [permissions.IsAuthenticated(), IsPeopleAdmin()]
        return [permissions.IsAuthenticated()]

    def get_queryset(self):
        grants = RoleGrant.objects.select_related("agent", "dataset").order_by("scope", "role")
        return User.objects.order_by("username").prefetch_related(
            Prefetch("role_grants", queryset=grants), "socialaccount_set"
        )

    @extend_schema(
        summary="Everyone, with roles and last sign-in (Admin)",
        responses={200: PersonSerializer(many=True), **refusals(403)},
    )
    def list(self, request):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(PersonSerializer(page, many=True).data)

    @extend_schema(
        summary="Invite a person: the answer carries their one-time sign-up link (Admin)",
        request=InviteInputSerializer,
        responses={201: InvitedSerializer, **refusals(400, 403, 409)},
    )
    def create(self, request):
        InviteUser(acting_user=request.user, username="").authorize()
        data = InviteInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user, token = InviteUser(acting_user=request.user, **data.validated_data).execute()
        user = self.get_queryset().get(pk=user.pk)
        answer = {**PersonSerializer(user).data, "invite_url": invite_url(request, token)}
        return Response(answer, status=status.HTTP_201_CREATED)

    def _verb(self, request, pk, verb_class):
        verb_class(acting_user=request.user, user=None).authorize()
        pk = parse_id(pk)
        user = self.get_queryset().filter(pk=pk).first() if pk is not None else None
        if user is None:
            raise NotFound("No such person.")
        verb_class(acting_user=request.user, user=user).execute()
        return Response(PersonSerializer(self.get_queryset().get(pk=pk)).data)

    @extend_schema(
        summary="Deactivate a person: no more sign-in, roles kept (Admin)",
        request=None,
        responses={200: PersonSerializer, **refusals(403, 404, 409)},
    )
    @action(detail=True, methods=["post"])
    def deactivate(self, request, pk=None):
        return self._verb(request, pk, DeactivateUser)

    @extend_schema(
        summary="Reactivate a person (Admin)",
        request=None,
        responses={200: PersonSerializer, **refusals(403, 404, 409)},
    )
    @action(detail=True, methods=["post"])
    def reactivate(self, request, pk=None):
        return self._verb(request, pk, ReactivateUser)
