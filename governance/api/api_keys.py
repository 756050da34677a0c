"""Each user's API keys: listed, created and revoked by their owner."""

import django_filters
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from governance.actions.create_api_key import CreateAPIKey
from governance.actions.revoke_api_key import RevokeAPIKey
from governance.api.serializers import (
    APIKeyCreatedSerializer,
    APIKeyInputSerializer,
    APIKeySerializer,
    ReasonInputSerializer,
)
from governance.models import (
    APIKey,
)
from governance.people.roles import is_global_admin
from sherlock.core.api.errors import refusals


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
