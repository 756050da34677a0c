"""The API's error side: one exception handler turns domain errors into `{"detail", "code"}`
with 400/403/409, and `ErrorSerializer` documents that shape in the OpenAPI schema."""

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from sherlock.core.errors import ActionConflict, ActionDenied, ActionInvalid


class ErrorSerializer(serializers.Serializer):
    """What every refused call answers (`exception_handler`)."""

    detail = serializers.CharField()
    code = serializers.CharField()
    field = serializers.CharField(required=False)


REFUSAL_TEXT = {
    400: "Invalid input.",
    403: "Your role does not allow this.",
    404: "Not found, or not visible to you.",
    409: "The state forbids it (already published, blocked, ...).",
}


def refusals(*statuses, **texts):
    """The schema's error responses of an endpoint: `refusals(400, 403)`, each in the
    `ErrorSerializer` shape with the usual description, or one given as `texts["s400"]`."""
    return {
        code: OpenApiResponse(
            ErrorSerializer, description=texts.get(f"s{code}", REFUSAL_TEXT[code])
        )
        for code in statuses
    }


def exception_handler(exc, context):
    if isinstance(exc, ActionDenied):
        return Response({"detail": str(exc), "code": exc.code}, status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, ActionConflict):
        return Response({"detail": str(exc), "code": exc.code}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, ActionInvalid):
        body = {"detail": str(exc), "code": exc.code}
        if exc.field:
            body["field"] = exc.field
        return Response(body, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        return Response(detail, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, DjangoPermissionDenied):
        return Response(
            {"detail": str(exc) or "Permission denied.", "code": "permission_denied"},
            status=status.HTTP_403_FORBIDDEN,
        )
    return drf_exception_handler(exc, context)
