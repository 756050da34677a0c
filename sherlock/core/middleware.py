"""Puts the request id, the client address and the signed-in user where the audit log can find
them; refuses a request with a NUL character anywhere in its URL or form body."""

import re
import uuid

from django.http import JsonResponse
from django.shortcuts import render

from sherlock.core.audit import client_address, request_context
from sherlock.core.hidden import audit_hidden_refusal
from sherlock.core.inputs import nul_in_request

# What a client may choose as its request id: it is stored in the audit log and echoed in a
# response header, so anything else (control characters, markup, 10 kB) is replaced.
REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def request_id_of(request):
    """The client's `X-Request-ID` when it is a plain token, else a fresh one."""
    given = request.headers.get("X-Request-ID", "")
    return given if REQUEST_ID.fullmatch(given) else uuid.uuid4().hex


class RequestContextMiddleware:
    """Listed after `AuthenticationMiddleware`. The user is handed to the audit context as a
        function, read only when an entry is written: `request.user` is lazy (resolving it here
        would cost a session and a user query on every request), and a DRF token user is known only
        once the view has authenticated it (DRF then sets `request.user` on this same request).

    It also audits every 404 answered to a verb (`sherlock.core.hidden`), inside the same context,
    so the entry has the request id and the client address like any other."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request_id = request_id_of(request)
        request.request_id = request_id
        with request_context(
            request_id=request_id,
            ip=client_address(request),
            actor=lambda: getattr(request, "user", None),
        ):
            response = self.get_response(request)
            audit_hidden_refusal(request, response)
        response["X-Request-ID"] = request_id
        return response


NUL_REFUSED = "NUL (\\x00, %00) characters are not accepted in addresses, queries or forms."


class RefuseNulMiddleware:
    """Listed last, after `AuthenticationMiddleware` (the page shows who is signed in) and
    `RequestContextMiddleware` (the answer has its request id): a NUL in the path, the query
    string (raw or `%00`) or a form body answers 400 before any view reads it, in the API's
    error shape under /api/ (naming the query parameter) and as the site's 400 page elsewhere.
    PostgreSQL stores no NUL in text, so without this every view that filters on what it was
    given would answer a 500 there (`sherlock.core.inputs`)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        found = nul_in_request(request)
        if found is None:
            return self.get_response(request)
        if request.path.startswith("/api/"):
            body = {"detail": NUL_REFUSED, "code": "nul_character"}
            _, field = found
            if field:
                body["field"] = field[:100]
                body["detail"] = f"{body['field']}: {NUL_REFUSED}"
            return JsonResponse(body, status=400)
        return render(request, "400.html", {"exception": NUL_REFUSED}, status=400)
