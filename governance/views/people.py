"""People: the one page where a global Admin manages the team.

Invite a person (a one-time sign-up link to copy, `InviteUser`, and a first role), grant and
revoke their roles globally or on one agent or dataset (`GrantRole`/`RevokeRole`, the one role
system), deactivate and reactivate them, see their last sign-in and where their roles come
from (an Admin, or single sign-on); and the single sign-on mapping of each configured provider
(`UpdateSSOProvider`, `MapSSOGroup`, `UnmapSSOGroup`). Every change is an action, audited.
Anyone but a global Admin is answered 403 with the reason. The invitee's page (`join`) is
public: the token is the permission.
"""

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.mail import send_mail
from django.db.models import Prefetch
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from governance.actions.accept_invite import AcceptInvite
from governance.actions.deactivate_user import DeactivateUser
from governance.actions.grant_role import GrantRole
from governance.actions.invite_user import InviteUser
from governance.actions.map_sso_group import MapSSOGroup
from governance.actions.reactivate_user import ReactivateUser
from governance.actions.revoke_role import RevokeRole
from governance.actions.sso_fields import configured_provider_ids
from governance.actions.unmap_sso_group import UnmapSSOGroup
from governance.actions.update_sso_provider import UpdateSSOProvider
from governance.choices import Role
from governance.models import RoleGrant, SSOGroupRole, SSOProvider
from governance.people.invites import invite_url, make_token, user_for_token
from governance.people.roles import is_global_admin
from governance.views.role_forms import RoleForm, ScopeForm
from sherlock.core.errors import ActionError, each_error
from sherlock.core.forms import show_refusal
from sherlock.core.inputs import parse_id

User = get_user_model()


def _require_admin(request, action=None):
    """403 unless a global Admin. A POST's refusal is its action's (`authorize`): audited as
    `governance.<noun>.refused` like every refused change, before any input is read."""
    if request.method == "POST" and action is not None:
        try:
            action.authorize()
        except ActionError as exc:
            raise PermissionDenied(str(exc)) from None
    if not is_global_admin(request.user):
        raise PermissionDenied("only an Admin manages people and their roles")


def _invite(request):
    return InviteUser(acting_user=request.user, username="")


class InviteForm(forms.Form):
    username = forms.CharField(max_length=150)
    email = forms.CharField(required=False, max_length=254)  # InviteUser checks it, with the rest
    first_name = forms.CharField(max_length=150, required=False)
    last_name = forms.CharField(max_length=150, required=False)
    role = forms.ChoiceField(choices=[("", "no role yet"), *Role.choices], required=False)


class MapForm(ScopeForm):
    group = forms.CharField(max_length=200)
    allow_bypass = forms.BooleanField(required=False)


class ProviderForm(forms.Form):
    claim_path = forms.CharField(max_length=200)
    strict = forms.BooleanField(required=False)


def _send_invite(user, link):
    """Mail the link when an e-mail server is configured; the Admin copies it in any case."""
    if not (settings.EMAIL_HOST_CONFIGURED and user.email):
        return False

    send_mail(
        "Your Sherlock account",
        f"An Admin added you to Sherlock. Set your password here (valid "
        f"{settings.SHERLOCK_INVITE_HOURS} hours, once): {link}",
        None,
        [user.email],
        fail_silently=True,
    )
    return True


def _people():
    grants = RoleGrant.objects.select_related("agent", "dataset").order_by("scope", "role")
    return User.objects.order_by("username").prefetch_related(
        Prefetch("role_grants", queryset=grants), "socialaccount_set"
    )


@login_required
def people_page(request):
    _require_admin(request, _invite(request))
    form = InviteForm(request.POST or None)
    invited = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            user, token = InviteUser(
                acting_user=request.user,
                username=data["username"],
                email=data["email"],
                first_name=data["first_name"],
                last_name=data["last_name"],
            ).execute()
            if data["role"]:
                GrantRole(
                    acting_user=request.user, user=user, role=data["role"], reason="invited"
                ).execute()
        except ActionError as exc:
            show_refusal(form, exc)
        else:
            link = invite_url(request, token)
            invited = {"user": user, "link": link, "mailed": _send_invite(user, link)}
            form = InviteForm()
    status = 400 if request.method == "POST" and form.errors else 200
    return render(
        request,
        "governance/people.html",
        {
            "people": _people(),
            "form": form,
            "invited": invited,
            "invite_hours": settings.SHERLOCK_INVITE_HOURS,
            "sso_providers": configured_provider_ids(),
            "password_login": settings.SHERLOCK_PASSWORD_LOGIN,
        },
        status=status,
    )


ROLE_VERBS = {"grant": GrantRole, "revoke": RevokeRole}


@login_required
def person_page(request, pk):
    # The verb is said, never inferred: a POST names `grant` or `revoke` (its button).
    said = [name for name in ROLE_VERBS if name in request.POST]
    verb = ROLE_VERBS[said[0]] if len(said) == 1 else GrantRole
    _require_admin(request, verb(acting_user=request.user, user=None, role=""))
    person = get_object_or_404(User, pk=pk)
    form = RoleForm(request.POST or None)
    if request.method == "POST" and len(said) != 1:
        messages.error(request, "Nothing changed: choose Grant or Revoke.")
        return _render_person(request, person, form=form, status=400)
    if request.method == "POST" and form.is_valid():
        try:
            verb(
                acting_user=request.user,
                user=person,
                role=form.cleaned_data["role"],
                obj=form.scope,
                reason=form.cleaned_data["reason"],
            ).execute()
        except ActionError as exc:
            messages.error(request, str(exc))
            return _render_person(request, person, form=form, status=400)
        messages.success(request, "Roles changed.")
        return redirect("people:person", pk)
    if request.method == "POST":  # refused: shown again as chosen, with why
        messages.error(request, " ".join(str(e) for errs in form.errors.values() for e in errs))
        return _render_person(request, person, form=form, status=400)
    return _render_person(request, person)


def _render_person(request, person, link=None, form=None, status=200):
    grants = RoleGrant.objects.filter(user=person).select_related("agent", "dataset", "granted_by")
    return render(
        request,
        "governance/person.html",
        {
            "person": person,
            "grants": sorted(grants, key=lambda g: (g.scope != "global", g.scope, g.role)),
            "form": form or RoleForm(),
            "sso_accounts": list(person.socialaccount_set.all()),
            "may_reinvite": not person.has_usable_password() and person.last_login is None,
            "link": link,
            "invite_hours": settings.SHERLOCK_INVITE_HOURS,
        },
        status=status,
    )


@login_required
@require_POST
def person_verb(request, pk, verb):
    actions = {"deactivate": DeactivateUser, "reactivate": ReactivateUser}
    if verb == "invite-link":
        _require_admin(request, _invite(request))
    elif verb in actions:
        _require_admin(request, actions[verb](acting_user=request.user, user=None))
    else:
        _require_admin(request)
    person = get_object_or_404(User, pk=pk)
    if verb == "invite-link":
        # A fresh link for an invitee who has not used theirs (the same token scheme: the old
        # one stays valid until it expires or one of them is used).
        if person.has_usable_password() or person.last_login is not None:
            messages.error(request, f"{person} has signed up already: no invitation to send.")
            return redirect("people:person", pk)
        return _render_person(request, person, link=invite_url(request, make_token(person)))
    if verb not in actions:
        raise Http404("no such verb")
    try:
        actions[verb](acting_user=request.user, user=person).execute()
    except ActionError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{person} {verb}d.")
    return redirect("people:person", pk)


@login_required
def sso_page(request):
    action: UnmapSSOGroup | UpdateSSOProvider | MapSSOGroup
    if "unmap" in request.POST:
        action = UnmapSSOGroup(acting_user=request.user, rule=None)
    elif "configure" in request.POST:
        action = UpdateSSOProvider(
            acting_user=request.user, provider_id="", claim_path="", strict=False
        )
    else:
        action = MapSSOGroup(acting_user=request.user, provider_id="", group="", role="")
    _require_admin(request, action)
    if request.method == "POST":
        _sso_post(request)
        return redirect("people:sso")
    configured = configured_provider_ids()
    stored = {
        p.provider_id: p
        for p in SSOProvider.objects.prefetch_related(
            Prefetch("rules", queryset=SSOGroupRole.objects.select_related("agent", "dataset"))
        )
    }
    providers = [
        {
            "id": pid,
            "mapping": stored.get(pid),
            "rules": list(stored[pid].rules.all()) if pid in stored else [],
            # One form per provider, its ids apart (the pickers are found by id).
            "form": MapForm(auto_id=f"id_{pid}_%s"),
        }
        for pid in configured
    ]
    return render(
        request,
        "governance/sso.html",
        {
            "providers": providers,
            "roles": Role.choices,
            "password_login": settings.SHERLOCK_PASSWORD_LOGIN,
        },
    )


def _sso_post(request):
    provider_id = request.POST.get("provider", "")
    try:
        if "unmap" in request.POST:
            rule = get_object_or_404(SSOGroupRole, pk=parse_id(request.POST.get("rule")) or 0)
            UnmapSSOGroup(acting_user=request.user, rule=rule).execute()
        elif "configure" in request.POST:
            provider = ProviderForm(request.POST)
            if not provider.is_valid():
                messages.error(request, "A claim path is required.")
                return
            UpdateSSOProvider(
                acting_user=request.user,
                provider_id=provider_id,
                claim_path=provider.cleaned_data["claim_path"],
                strict=provider.cleaned_data["strict"],
            ).execute()
        else:
            form = MapForm(request.POST)
            valid = form.is_valid()
            data = form.cleaned_data
            action = MapSSOGroup(
                acting_user=request.user,
                provider_id=provider_id,
                group=data.get("group", ""),
                role=data.get("role", ""),
                obj=form.scope,
                allow_bypass=data.get("allow_bypass", False),
            )
            if not valid:
                # The mapping's own rules are asked all the same: every problem at once.
                problems = [f"{name}: {e}" for name, errs in form.errors.items() for e in errs]
                try:
                    action.check()
                except ActionError as exc:
                    problems += [str(e) for e in each_error(exc) if e.field not in form.errors]
                messages.error(request, " ".join(problems))
                return
            action.execute()
    except ActionError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, "Single sign-on mapping changed; it applies at each next sign-in."
        )


class JoinForm(forms.Form):
    password1 = forms.CharField(label="Password", widget=forms.PasswordInput, strip=False)
    password2 = forms.CharField(label="Password again", widget=forms.PasswordInput, strip=False)

    def clean(self):
        super().clean()
        cleaned = self.cleaned_data
        if cleaned.get("password1") != cleaned.get("password2"):
            raise forms.ValidationError("The two passwords differ.")
        return cleaned


def join_page(request, token):
    """The invitee sets their password, then signs in on the sign-in page."""
    invitee = user_for_token(token)
    form = JoinForm(request.POST or None)
    if invitee is not None and request.method == "POST" and form.is_valid():
        try:
            user = AcceptInvite(token=token, password=form.cleaned_data["password1"]).execute()
        except ActionError as exc:
            show_refusal(form, exc, aliases={"password": "password1"})
        else:
            messages.success(request, f"Welcome, {user}. Your password is set: sign in.")
            return redirect(f"{settings.LOGIN_URL}?next=/")
    return render(
        request,
        "governance/join.html",
        {"invitee": invitee, "form": form},
        status=200 if invitee is not None else 410,
    )
