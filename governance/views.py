"""The publish page (DESIGN section 11): a version's gate checklist with the publish and bypass
forms. Every button calls the same action as the API and the admin, and is shown only when the
action's `check()` would let this user use it now; the checklist refreshes itself (htmx) while
the gate runs are evaluating. Objects come from `for_user`: what a user may not see is 404.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from agents.models import AgentVersion
from governance.actions.approve_bypass import ApproveBypass
from governance.actions.deny_bypass import DenyBypass
from governance.actions.publish_version import PublishVersion
from governance.actions.request_bypass import RequestBypass
from governance.actions.request_publication import RequestPublication
from governance.actions.retire_version import RetireVersion
from governance.actions.revoke_bypass import RevokeBypass
from governance.actions.rollback_version import RollBackVersion
from governance.choices import BYPASS_ACTIVE, BypassState, RequestState
from governance.decision import gate_rows, release_of
from governance.models import Bypass, PublishRequest
from sherlock.core.errors import ActionError
from sherlock.core.hidden import visible_or_404
from sherlock.core.htmx import render_page

VERSION_VERBS = {
    "request": RequestPublication,
    "publish": PublishVersion,
    "rollback": RollBackVersion,
    "retire": RetireVersion,
}
BYPASS_VERBS = {"approve": ApproveBypass, "deny": DenyBypass, "revoke": RevokeBypass}


def _version(request, pk):
    versions = AgentVersion.objects.for_user(request.user, "view").select_related(
        "agent", "created_by"
    )
    return visible_or_404(request, versions, pk=pk)


def _current_request(version):
    return (
        PublishRequest.objects.filter(agent_version=version)
        .exclude(state=RequestState.SUPERSEDED)
        .select_related("policy", "requested_by", "published_by")
        .prefetch_related("runs__dataset_version__dataset")
        .order_by("-pk")
        .first()
    )


def _may(action):
    try:
        action()
    except ActionError:
        return False
    return True


def _why_not_independent(user, bypass):
    """Why an Admin who could otherwise approve `bypass` may not (their Admin role comes from
    its requester, or is too new), so the page says so instead of hiding the button."""
    if bypass.state != BypassState.REQUESTED:
        return ""
    try:
        ApproveBypass(acting_user=user, bypass=bypass).check()
    except ActionError as exc:
        return str(exc) if exc.code == "approver_not_independent" else ""
    return ""


def page_context(request, version):
    user = request.user
    publish_request = _current_request(version)
    bypasses = (
        list(publish_request.bypasses.select_related("requested_by", "approved_by"))
        if publish_request
        else []
    )
    verbs = {
        name: _may(verb(acting_user=user, agent_version=version).check)
        for name, verb in VERSION_VERBS.items()
    }
    verbs["bypass"] = publish_request is not None and _may(
        RequestBypass(
            acting_user=user, publish_request=publish_request, reason=""
        ).check_without_reason
    )
    for bypass in bypasses:
        bypass.verbs = [
            name
            for name, verb in BYPASS_VERBS.items()
            if bypass.state in BYPASS_ACTIVE and _may(verb(acting_user=user, bypass=bypass).check)
        ]
        bypass.why_not_approve = _why_not_independent(user, bypass)
    decision = publish_request.decision if publish_request else {}
    return {
        "version": version,
        "publish_request": publish_request,
        "gates": gate_rows(decision),
        "release": release_of(decision) if decision else None,
        "first_failing": decision.get("first_failing_gate"),
        "evaluating": publish_request is not None
        and publish_request.state == RequestState.EVALUATING,
        "bypasses": bypasses,
        "verbs": verbs,
    }


@login_required
def publish_page(request, pk):
    version = _version(request, pk)
    return render_page(
        request,
        "governance/publish.html",
        page_context(request, version),
        partial="governance/partials/gate.html",
    )


def _run(request, action, done):
    try:
        action.execute()
    except ActionError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, done)


@login_required
@require_POST
def version_verb(request, pk, verb):
    version = _version(request, pk)
    if verb not in VERSION_VERBS:
        raise Http404(verb)
    extra = {} if verb == "request" else {"reason": request.POST.get("reason", "")}
    action = VERSION_VERBS[verb](acting_user=request.user, agent_version=version, **extra)
    _run(request, action, f"{version}: {verb} done.")
    return redirect("governance:publish", pk=version.pk)


@login_required
@require_POST
def request_bypass(request, pk):
    version = _version(request, pk)
    publish_request = _current_request(version)
    if publish_request is None:
        raise Http404("no publish request")
    reason = request.POST.get("reason", "")
    action = RequestBypass(acting_user=request.user, publish_request=publish_request, reason=reason)
    _run(request, action, "Bypass requested.")
    return redirect("governance:publish", pk=version.pk)


@login_required
@require_POST
def bypass_verb(request, pk, verb):
    bypasses = Bypass.objects.for_user(request.user, "view").select_related(
        "publish_request__agent_version"
    )
    bypass = visible_or_404(request, bypasses, pk=pk)
    if verb not in BYPASS_VERBS:
        raise Http404(verb)
    action = BYPASS_VERBS[verb](
        acting_user=request.user, bypass=bypass, reason=request.POST.get("reason", "")
    )
    _run(request, action, f"Bypass {verb} done.")
    return redirect("governance:publish", pk=bypass.publish_request.agent_version_id)
