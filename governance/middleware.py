"""Puts the request id and client address where the audit log can find them."""

import uuid

from agents.audit import client_address, request_context


class RequestContextMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request_id = request.headers.get("X-Request-ID", "")[:64] or uuid.uuid4().hex
        request.request_id = request_id
        with request_context(request_id=request_id, ip=client_address(request)):
            response = self.get_response(request)
        response["X-Request-ID"] = request_id
        return response
