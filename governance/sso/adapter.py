"""The allauth adapters: who may sign in, and what a single sign-on does to roles.

- Nobody signs themselves up with a password: accounts come from an Admin's invitation
  (People) or from a first single sign-on. A social sign-up is open (the mapping decides).
- A single sign-on is refused when its ID token does not carry the nonce this sign-in sent
  (`governance.sso.provider`), and, for a provider in strict mode, when the user's groups map
  to no role; both refusals are audited (`governance.sso.refused`) and answered with a page
  that says why.
- After a single sign-on the mapping is re-applied (`ApplySSORoles`), and the session keeps the
  provider and the raw ID token, so that signing out can end the provider's session too (RP-
  initiated logout to the provider's `end_session_endpoint`, when its discovery document
  publishes one).
"""

import logging
from urllib.parse import urlencode

from allauth.account.adapter import DefaultAccountAdapter
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from allauth.socialaccount.providers.openid_connect.provider import OpenIDConnectProvider
from django.conf import settings
from django.shortcuts import render
from django.urls import reverse

from governance.actions.apply_sso_roles import ApplySSORoles
from governance.models import SSOProvider
from governance.sso.claims import evidence, groups_at, matching_rules, merged_claims
from governance.sso.provider import NonceOpenIDConnectProvider
from sherlock.core.audit import audit
from sherlock.core.permissions import who_grants_roles

logger = logging.getLogger("sherlock.sso")
SESSION_KEY = "sherlock_sso"


class AccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request):
        return False  # People: an Admin invites; nobody signs up with a password

    def respond_user_inactive(self, request, user):
        """A deactivated account that gave its right password (or signed on): told so, with
        the Admins who may reactivate it, never "wrong password"."""

        context = {"admins": who_grants_roles()}
        return render(request, "account/account_inactive.html", context, status=403)

    def get_logout_redirect_url(self, request):
        """The provider's end-session URL when this session came from a single sign-on whose
        provider publishes one (asked before the session is flushed), else the sign-in page."""
        local = super().get_logout_redirect_url(request)
        sso = request.session.get(SESSION_KEY) if hasattr(request, "session") else None
        if not sso:
            return local
        # Imported here: allauth's provider views import its models, which exist only once the
        # registry is ready.
        from allauth.socialaccount.providers.openid_connect.views import (
            OpenIDConnectOAuth2Adapter,
        )

        try:
            oauth2 = OpenIDConnectOAuth2Adapter(request, sso["provider_id"])
            endpoint = oauth2.openid_config.get("end_session_endpoint")
            client_id = oauth2.get_provider().app.client_id
        except Exception:  # an unreachable provider must not stop a local sign-out
            logger.warning("sign-out: the provider %s did not answer", sso["provider_id"])
            return local
        if not endpoint:
            return local
        query = {
            "post_logout_redirect_uri": request.build_absolute_uri(local),
            "client_id": client_id,
        }
        if sso.get("id_token"):
            query["id_token_hint"] = sso["id_token"]
        separator = "&" if "?" in endpoint else "?"
        return f"{endpoint}{separator}{urlencode(query)}"


def refuse(request, provider_id, code, message, claims=None, user=None):
    """Audit a refused single sign-on and answer with a page saying why (403)."""
    audit(
        "governance.sso.refused",
        target=user,
        after={"provider": provider_id, "code": code, "claims": claims or {}},
        reason=message,
    )
    response = render(
        request,
        "account/sso_refused.html",
        {"message": message, "provider_id": provider_id},
        status=403,
    )
    raise ImmediateHttpResponse(response)


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    def get_provider(self, request, provider, client_id=None):
        found = super().get_provider(request, provider, client_id=client_id)
        if isinstance(found, OpenIDConnectProvider) and not isinstance(
            found, NonceOpenIDConnectProvider
        ):
            return NonceOpenIDConnectProvider(request, app=found.app)
        return found

    def is_open_for_signup(self, request, sociallogin):
        return True  # the mapping (strict mode) decides who may come in

    def pre_social_login(self, request, sociallogin):
        """Before allauth signs the user in (or up): the nonce, then strict mode."""

        provider_id = sociallogin.account.provider
        id_token = (sociallogin.account.extra_data or {}).get("id_token") or {}
        expected = (sociallogin.state or {}).get("nonce")
        if not expected or id_token.get("nonce") != expected:
            refuse(
                request,
                provider_id,
                "nonce",
                "The provider's answer does not belong to this sign-in (its nonce does not "
                "match). Sign in again.",
            )
        claims = merged_claims(sociallogin.account.extra_data)
        mapping = SSOProvider.objects.filter(provider_id=provider_id).first()
        if mapping is not None and mapping.strict:
            groups = groups_at(claims, mapping.claim_path)
            if not matching_rules(list(mapping.rules.all()), groups):
                user = sociallogin.user if sociallogin.is_existing else None
                refuse(
                    request,
                    provider_id,
                    "unmapped",
                    f"Your groups at {provider_id} ({', '.join(groups) or 'none'}) give no "
                    "role in Sherlock, and this provider admits only people whose groups "
                    "do. Ask an Admin to map one of your groups (People, Single sign-on).",
                    claims=evidence(claims, mapping.claim_path, groups),
                    user=user,
                )


def apply_roles_on_sign_in(sender, request, user, sociallogin=None, **kwargs):
    """allauth's `user_logged_in`: after a single sign-on, re-apply the mapping and remember
    the provider (and its raw ID token, kept by `governance.sso.views`) for the sign-out."""
    if sociallogin is None:
        return

    provider_id = sociallogin.account.provider
    claims = merged_claims(sociallogin.account.extra_data)
    ApplySSORoles(user=user, provider_id=provider_id, claims=claims).execute()
    request.session[SESSION_KEY] = {
        "provider_id": provider_id,
        "id_token": getattr(request, "_sherlock_id_token", ""),
    }


def sign_in_context():
    """The sign-in page's buttons: one per configured OIDC provider."""
    return [
        {
            "name": app["name"],
            "url": reverse("openid_connect_login", kwargs={"provider_id": app["provider_id"]}),
        }
        for app in settings.SHERLOCK_OIDC_APPS
    ]
