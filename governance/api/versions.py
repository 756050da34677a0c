"""The publishing verbs on a version: request publication, publish, retire, roll back. They
share the `/versions/{id}/` path with agents.api, which serves the version itself."""

from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from agents.api.serializers import AgentVersionSerializer
from agents.models import AgentVersion
from governance.actions.publish_version import PublishVersion
from governance.actions.request_publication import RequestPublication
from governance.actions.retire_version import RetireVersion
from governance.actions.rollback_version import RollBackVersion
from governance.api.publish_requests import publish_requests
from governance.api.responses import REFUSED
from governance.api.serializers import (
    AttestationSerializer,
    PublicationSerializer,
    PublishRequestSerializer,
    ReasonInputSerializer,
    RequestPublicationInputSerializer,
)
from governance.publishing.publication import publication_of
from sherlock.core.api.errors import refusals


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

    @extend_schema(
        summary="The version's signed release attestations, newest first",
        description="One per publication, rollback or retirement while attestations were on: "
        "a DSSE envelope around an in-toto statement, verifiable offline with the public key "
        "(`/.well-known/sherlock/attestation-keys.json`, `sherlock verify --attestation`; "
        "docs/attestations.md).",
        responses={200: AttestationSerializer(many=True), **refusals(404)},
    )
    @action(detail=True, methods=["get"], pagination_class=None)
    def attestations(self, request, pk=None):
        version = self.get_object()
        return Response(AttestationSerializer(version.attestations.all(), many=True).data)

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
