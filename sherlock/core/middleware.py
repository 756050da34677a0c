"""Puts the request id, the client address and the signed-in user where the audit log can find
them; refuses a request with a NUL character anywhere in its URL or form body."""

import re
import uuid
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from sherlock.core.audit import client_address, request_context
from sherlock.core.hidden import audit_hidden_refusal
from sherlock.core.inputs import nul_in_request

# What a client may choose as its request id: it is stored in the audit log and echoed in a
# response header, so anything else (control characters, markup, 10 kB) is replaced.
REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def request_id_of(request: HttpRequest) -> str:
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

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = request_id_of(request)
        request.request_id = request_id  # type: ignore[attr-defined]  # read by the log
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
INT_REFUSED = "A number in the request is out of range (at most 9223372036854775807)."


class RefuseNulMiddleware:
    """Listed last, after `AuthenticationMiddleware` (the page shows who is signed in) and
    `RequestContextMiddleware` (the answer has its request id): a NUL in the path, the query
    string (raw or `%00`) or a form body answers 400 before any view reads it, in the API's
    error shape under /api/ (naming the query parameter) and as the site's 400 page elsewhere.
    PostgreSQL stores no NUL in text, so without this every view that filters on what it was
    given would answer a 500 there (`sherlock.core.inputs`). An id beyond SQLite's integers
    that reached the database anyway is refused the same way (`process_exception`)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        found = nul_in_request(request)
        if found is None:
            return self.get_response(request)
        return self.refuse(request, found, NUL_REFUSED, "nul_character")

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        """An integer a query named that SQLite cannot be asked about (`2**63` for a foreign key
        in an admin list's filter: Django bounds integer columns, not foreign keys) is the
        caller's error, 400, not a 500. Any other OverflowError is a bug and is left to raise."""
        if isinstance(exception, OverflowError) and "SQLite INTEGER" in str(exception):
            return self.refuse(request, (None, None), INT_REFUSED, "out_of_range")
        return None

    def refuse(
        self, request: HttpRequest, found: tuple[str | None, str | None], message: str, code: str
    ) -> HttpResponse:
        """400 in the API's error shape under /api/ (naming the field, if known), else the
        site's 400 page."""
        if request.path.startswith("/api/"):
            body = {"detail": message, "code": code}
            _, field = found
            if field:
                body["field"] = field[:100]
                body["detail"] = f"{body['field']}: {message}"
            return JsonResponse(body, status=400)
        return render(request, "400.html", {"exception": message}, status=400)
