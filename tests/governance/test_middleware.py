"""The request context of the audit log: a client's `X-Request-ID` is kept only when it is a
plain token, and the signed-in user is the actor of what the catch-all receivers record, read
when the entry is written (so a user DRF authenticates in the view counts too)."""

import pytest
from django.contrib.auth.models import AnonymousUser, Group
from django.http import HttpResponse
from django.test import RequestFactory

from governance.models import AuditEntry
from sherlock.core.audit import current_actor, current_request_id
from sherlock.core.middleware import RequestContextMiddleware


def through_middleware(view, user=None, **headers):
    request = RequestFactory().get("/", **headers)
    if user is not None:
        request.user = user
    response = RequestContextMiddleware(view)(request)
    return request, response


@pytest.mark.parametrize("given", ["req-42", "a.b_c-1", "A" * 64, "0"])
def test_a_plain_request_id_is_kept(given, db):
    seen = {}

    def view(request):
        seen["id"] = current_request_id()
        return HttpResponse()

    _, response = through_middleware(view, HTTP_X_REQUEST_ID=given)
    assert seen["id"] == given and response["X-Request-ID"] == given


@pytest.mark.parametrize(
    "given",
    ["", "A" * 65, "has space", "line\nbreak", "<script>", "id;drop", "caf\u00e9", "x\u200by"],
)
def test_any_other_request_id_is_replaced_by_a_fresh_one(given, db):
    seen = {}

    def view(request):
        seen["id"] = current_request_id()
        return HttpResponse()

    _, response = through_middleware(view, HTTP_X_REQUEST_ID=given)
    assert seen["id"] != given and len(seen["id"]) == 32
    assert response["X-Request-ID"] == seen["id"]


def test_a_bad_request_id_never_reaches_the_audit_log(client, publisher, password):
    client.post(
        "/accounts/login/?next=/admin/",
        {"login": "publisher", "password": password},
        HTTP_X_REQUEST_ID="<img src=x onerror=alert(1)>",
    )
    entry = AuditEntry.objects.get(action="auth.user.login")
    assert "<" not in entry.request_id and len(entry.request_id) == 32


def test_the_signed_in_user_is_the_actor_of_a_catch_all_entry(admin_user, publisher):
    def view(request):
        publisher.groups.add(Group.objects.get(name="Builder"))
        return HttpResponse()

    through_middleware(view, user=admin_user)
    entry = AuditEntry.objects.filter(action="auth.membership.add").latest("sequence")
    assert entry.target_id == str(publisher.pk) and entry.after == {"groups": ["Builder"]}
    assert entry.actor_id == admin_user.pk


def test_a_user_authenticated_inside_the_view_is_the_actor(admin_user):
    # DRF authenticates a token in the view and sets `request.user` then.
    seen = {}

    def view(request):
        seen["before"] = current_actor()
        request.user = admin_user
        seen["after"] = current_actor()
        return HttpResponse()

    through_middleware(view, user=AnonymousUser())
    assert seen == {"before": None, "after": admin_user}


def test_no_request_no_actor(db):
    assert current_actor() is None


def test_a_request_without_authentication_has_no_actor(db):
    seen = {}

    def view(request):
        seen["actor"] = current_actor()
        return HttpResponse()

    through_middleware(view)  # no `request.user` at all
    assert seen["actor"] is None
