"""allauth's OpenID Connect provider, with a nonce.

allauth's generic provider sends `state` and (with `oauth_pkce_enabled`) a PKCE challenge, but
no `nonce`; the ID token then proves nothing about which sign-in it answers. This subclass
draws a nonce for each sign-in, sends it, and keeps it in the sign-in's stashed state, and
`governance.sso.adapter.SocialAccountAdapter.pre_social_login` refuses an ID token that does
not carry it back. The socialaccount adapter hands out this class for every `openid_connect` app.
"""

import secrets

from allauth.socialaccount.providers.openid_connect.provider import OpenIDConnectProvider


class NonceOpenIDConnectProvider(OpenIDConnectProvider):
    def redirect(self, request, process, next_url=None, data=None, **kwargs):
        nonce = secrets.token_urlsafe(32)
        auth_params = kwargs.pop("auth_params", None)
        if auth_params is None:
            auth_params = self.get_auth_params()
        auth_params = {**auth_params, "nonce": nonce}
        return super().redirect(
            request, process, next_url, data, auth_params=auth_params, nonce=nonce, **kwargs
        )
