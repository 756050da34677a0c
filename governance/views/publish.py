"""The publish page: a version's gate checklist with the publish and bypass
forms. Every button calls the same action as the API and the admin, and is shown only when the
action's `check()` would let this user use it now; the checklist refreshes itself (htmx) while
the gate runs are evaluating. Objects come from `for_user`: what a user may not see is 404.

Publishing, rolling back, retiring and asking again for publication while a decision is open
are two steps, plain HTML forms that work without JavaScript: the first shows what the verb
relies on and costs (`governance.publishing.confirmations`), the second runs it. A refused form
comes back with what was typed and the reason under its field (or under its button when the refusal
is not about the field), answered 400, 403 or 409 as the API would; a verb that ran redirects to
the page with a message.
"""

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from agents.models import AgentVersion
from evaluations.choices import RunStatus
from governance.actions.approve_bypass import ApproveBypass
from governance.actions.deny_bypass import DenyBypass
from governance.actions.publish_version import PublishVersion
from governance.actions.request_bypass import RequestBypass
from governance.actions.request_publication import RequestPublication
from governance.actions.retire_version import RetireVersion
from governance.actions.revoke_bypass import RevokeBypass
from governance.actions.rollback_version import RollBackVersion
from governance.choices import BYPASS_ACTIVE, REQUEST_DECIDED, BypassState, RequestState
from governance.models import Bypass, PublishingPolicy, PublishRequest
from governance.publishing.confirmations import (
    clearance_text,
    publish_plan,
    request_plan,
    retire_plan,
)
from governance.publishing.decision import (
    gate_label,
    gate_rows,
    missing_of,
    outcome_of,
    paired_of,
)
from governance.publishing.next_step import next_step, what_it_waits_for
from sherlock.core.api.errors import domain_status
from sherlock.core.errors import ActionError
from sherlock.core.forms import show_refusal
from sherlock.core.hidden import visible_or_404
from sherlock.core.htmx import render_page

VERSION_VERBS: dict[str, type[Any]] = {
    "request": RequestPublication,
    "publish": PublishVersion,
    "rollback": RollBackVersion,
    "retire": RetireVersion,
}
BYPASS_VERBS = {"approve": ApproveBypass, "deny": DenyBypass, "revoke": RevokeBypass}
# The text field of each form of the page (asking for publication has none).
REASON_WIDGETS = {
    "publish": forms.TextInput(attrs={"placeholder": "note (optional)"}),
    "rollback": forms.TextInput(attrs={"placeholder": "note (optional)"}),
    "retire": forms.TextInput(attrs={"placeholder": "why"}),
    "bypass": forms.Textarea(
        attrs={
            "rows": 3,
            "cols": 80,
            "placeholder": "Why must this gate be bypassed? (at least 30 characters)",
        }
    ),
}


class VerbForm(forms.Form):
    """One form of the page: it carries the reason (when the verb takes one) back to the page
    with the refusal under it. It validates nothing: the action is the one judge, so a refusal
    reads the same here as in the API and the admin."""

    def __init__(self, verb, *args, **kwargs):
        kwargs["auto_id"] = f"id_{verb}_%s"
        super().__init__(*args, **kwargs)
        self.verb = verb
        if verb in REASON_WIDGETS:
            self.fields["reason"] = forms.CharField(
                required=False, strip=False, widget=REASON_WIDGETS[verb], label="reason"
            )

    @property
    def reason(self):
        return self.data.get("reason", "") if self.is_bound else ""


def _version(request, pk):
    versions = AgentVersion.objects.for_user(request.user, "view").select_related(
        "agent__live_version", "created_by"
    )
    return visible_or_404(request, versions, pk=pk)


def _current_request(version):
    return (
        PublishRequest.objects.select_related("policy", "requested_by", "published_by")
        .prefetch_related("runs__dataset_version__dataset")
        .current_for(version)
    )


def _checked(action):
    """`action` when its `check()` lets it run now, else None."""
    try:
        action.check()
    except ActionError:
        return None
    return action


def _may(check):
    """`check` (an action's `check`, or a part of it) lets the user act now."""
    return _refusal(check) is None


def _refusal(check):
    """Why `check` does not let the user act now (the action's error), or None."""
    try:
        check()
    except ActionError as exc:
        return exc
    return None


# Why a Builder may not ask for publication that only someone else can fix: the agent lacks a
# policy or a gate dataset. The page says it instead of offering nothing.
SETUP_REFUSALS = ("no_policy", "no_gate_datasets", "no_frozen_dataset")


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


def _open(publish_request):
    """The request is a decision a Publisher or an Admin may still act on (passed, blocked)."""
    return publish_request is not None and publish_request.state in REQUEST_DECIDED


def version_action(user, version, verb, reason="", publish_request=None):
    """The action of `verb` on `version`, as the page's forms call it. Asking for publication
    while a decision is open names that decision (`supersede`): the page shows the cost first."""
    if verb == "request":
        supersede = publish_request.pk if _open(publish_request) else None
        return RequestPublication(acting_user=user, agent_version=version, supersede=supersede)
    return VERSION_VERBS[verb](acting_user=user, agent_version=version, reason=reason)


def plan_of(verb, action, publish_request):
    """The confirmation `verb` needs before it runs, or None (it runs at once). The action is
    checked here; when it may not run there is nothing to confirm and `execute()` refuses."""
    if _checked(action) is None:
        return None
    if verb in ("publish", "rollback"):
        return publish_plan(action)
    if verb == "retire":
        return retire_plan(action.agent_version)
    if verb == "request" and _open(publish_request):
        return request_plan(action, publish_request)
    return None


def waiting_text(version, publish_request):
    """What the open decision waits for, told above the buttons (`governance.publishing.next_step`):
    a passed request waits for a Publisher (unless the policy or the configuration moved since),
    a blocked one for a bypass."""
    if not _open(publish_request):
        return ""
    in_force = PublishingPolicy.objects.in_force_for(version.agent)
    return what_it_waits_for(next_step(version, publish_request, in_force))


def page_context(request, version, *, posted=None, confirm=None, bypass_errors=None, refresh=False):
    """The page's context. `posted` is a bound `VerbForm` coming back with its refusal,
    `confirm` the plan of a verb waiting for its second step, `bypass_errors` a refusal of a
    bypass verb by the bypass's id; `refresh` says the checklist was polled (`publish_page`)."""
    user = request.user
    publish_request = _current_request(version)
    bypasses = (
        list(publish_request.bypasses.select_related("requested_by", "approved_by"))
        if publish_request
        else []
    )
    actions = {
        verb: version_action(user, version, verb, publish_request=publish_request)
        for verb in VERSION_VERBS
    }
    refusals = {verb: _refusal(action.check) for verb, action in actions.items()}
    verbs = {verb: refusal is None for verb, refusal in refusals.items()}
    request_refusal = refusals["request"]
    why_not_request = (
        str(request_refusal)
        if request_refusal is not None and request_refusal.code in SETUP_REFUSALS
        else ""
    )
    # A request that would supersede an open decision is "Request publication again…", which
    # shows the cost before it runs; never the plain button.
    verbs["request_again"] = verbs["request"] and _open(publish_request)
    verbs["request"] = verbs["request"] and not verbs["request_again"]
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
        # The requester's own "deny" is a withdrawal, and reads so.
        own = bypass.requested_by_id == user.pk
        bypass.buttons = [
            (name, "withdraw" if name == "deny" and own else name) for name in bypass.verbs
        ]
        bypass.why_not_approve = _why_not_independent(user, bypass)
        bypass.error = (bypass_errors or {}).get(bypass.pk, "")
    page_forms = {verb: VerbForm(verb) for verb in (*VERSION_VERBS, "bypass")}
    refused_elsewhere = ""
    if posted is not None:
        page_forms[posted.verb] = posted
        shown = verbs[posted.verb] or (posted.verb == "request" and verbs["request_again"])
        if posted.errors and not shown:
            # The verb's form is gone (the state moved): its refusal is told where it stood.
            refused_elsewhere = " ".join(e for errors in posted.errors.values() for e in errors)
    decision = publish_request.decision if publish_request else {}
    evaluating = publish_request is not None and publish_request.state == RequestState.EVALUATING
    # A client version's gate runs wait for its client, not for a worker (docs/client.md).
    waiting_for_client = evaluating and any(
        run.status == RunStatus.WAITING for run in publish_request.runs.all()
    )
    return {
        "version": version,
        "publish_request": publish_request,
        # Signed statements of its releases, newest first (docs/attestations.md); one query.
        "attestations": list(version.attestations.only("pk", "event", "created_at", "keyid")),
        "gates": gate_rows(decision),
        # Paired with the live version: the cases that differ, regressions first.
        "paired": paired_of(decision),
        # passed, failed or incomplete, as the run page says it; what is missing, and why.
        "outcome": outcome_of(decision) if decision else None,
        "reasons": [
            reason.get("detail")
            for reason in (decision.get("verdict") or {}).get("reasons") or []
            if isinstance(reason, dict)
        ],
        "missing": missing_of(decision),
        # What fixes each failed gate, as the run page says it.
        "fixes": [
            reason
            for reason in (decision.get("verdict") or {}).get("reasons") or []
            if isinstance(reason, dict) and reason.get("fix")
        ],
        "first_failing": gate_label(decision.get("first_failing_gate")),
        "evaluating": evaluating,
        "waiting_for_client": waiting_for_client,
        "refresh_actions": refresh and not evaluating,
        "waiting": waiting_text(version, publish_request),
        "clearance": {
            verb: clearance_text(actions[verb]) for verb in ("publish", "rollback") if verbs[verb]
        },
        "bypasses": bypasses,
        "verbs": verbs,
        "forms": page_forms,
        "refused_elsewhere": refused_elsewhere,
        "why_not_request": why_not_request,
        "confirm": confirm,
    }


def _page(request, version, status=200, partial=None, **context):
    response = render_page(
        request, "governance/publish.html", page_context(request, version, **context), partial
    )
    response.status_code = status
    return response


@login_required
def publish_page(request, pk):
    """The page; `?part=gate` (the checklist's own poll while evaluating) only the checklist.
    The poll that sees the decision made has the whole page loaded once, so the buttons the
    decision allows appear without a reload."""
    version = _version(request, pk)
    if request.GET.get("part") == "gate":
        return _page(request, version, partial="governance/partials/gate.html", refresh=True)
    return _page(request, version)


def _refused(request, version, form, exc):
    show_refusal(form, exc)
    return _page(request, version, status=domain_status(exc), posted=form)


@login_required
@require_POST
def version_verb(request, pk, verb):
    """A version verb's form. A verb that needs a confirmation runs only when the posted
    `confirmed` key is the one of the plan it would follow now; otherwise the page shows that
    plan (its first step, or again when it changed since it was shown)."""
    version = _version(request, pk)
    if verb not in VERSION_VERBS:
        raise Http404(verb)
    form = VerbForm(verb, request.POST)
    publish_request = _current_request(version)
    action = version_action(request.user, version, verb, form.reason, publish_request)
    plan = plan_of(verb, action, publish_request)
    if plan is not None and request.POST.get("confirmed") != plan["key"]:
        plan["changed"] = "confirmed" in request.POST
        plan["reason"] = form.reason
        return _page(request, version, posted=form, confirm=plan)
    try:
        action.execute()
    except ActionError as exc:
        return _refused(request, version, form, exc)
    messages.success(request, f"{version}: {DONE[verb]}.")
    return redirect("governance:publish", pk=version.pk)


DONE = {
    "request": "publication requested, the gate runs started",
    "publish": "published",
    "rollback": "rolled back to",
    "retire": "retired",
}


@login_required
@require_POST
def request_bypass(request, pk):
    version = _version(request, pk)
    publish_request = _current_request(version)
    if publish_request is None:
        raise Http404("no publish request")
    form = VerbForm("bypass", request.POST)
    action = RequestBypass(
        acting_user=request.user, publish_request=publish_request, reason=form.reason
    )
    try:
        bypass = action.execute()
    except ActionError as exc:
        return _refused(request, version, form, exc)
    messages.success(request, f"Bypass #{bypass.pk} {bypass.state}.")
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
    try:
        action.execute()
    except ActionError as exc:
        version = _version(request, bypass.publish_request.agent_version_id)
        return _page(
            request,
            version,
            status=domain_status(exc),
            bypass_errors={bypass.pk: str(exc)},
        )
    messages.success(request, f"Bypass #{bypass.pk}: {verb} done.")
    return redirect("governance:publish", pk=bypass.publish_request.agent_version_id)
