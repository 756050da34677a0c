"""The OIDC callback, as allauth's, keeping the raw ID token for the sign-out's
`id_token_hint` (allauth keeps only its decoded claims). Mounted at allauth's own callback
path, ahead of allauth's URLs (sherlock/urls.py), so the redirect URI stays allauth's."""

from allauth.socialaccount.models import SocialApp
from allauth.socialaccount.providers.oauth2.views import OAuth2CallbackView
from allauth.socialaccount.providers.openid_connect.views import OpenIDConnectOAuth2Adapter
from django.http import Http404


class KeepIdTokenAdapter(OpenIDConnectOAuth2Adapter):
    def complete_login(self, request, app, token, **kwargs):
        request._sherlock_id_token = (kwargs.get("response") or {}).get("id_token") or ""
        return super().complete_login(request, app, token, **kwargs)


def callback(request, provider_id):
    try:
        view = OAuth2CallbackView.adapter_view(KeepIdTokenAdapter(request, provider_id))
        return view(request)
    except SocialApp.DoesNotExist:
        raise Http404 from None
