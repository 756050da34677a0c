"""Publish requests with their decision (read-only: a request is made by the version's
`request_publication` verb)."""

import django_filters
from django.db.models import Prefetch
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from governance.actions.request_bypass import RequestBypass
from governance.api.responses import REFUSED
from governance.api.serializers import (
    BypassInputSerializer,
    BypassSerializer,
    PublishRequestSerializer,
)
from governance.choices import RequestState
from governance.models import (
    Bypass,
    PublishRequest,
)


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
