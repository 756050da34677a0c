"""The sign-in page's single sign-on buttons, one per configured OIDC provider."""

from django import template
from django.conf import settings

from governance.sso.adapter import sign_in_context

register = template.Library()


@register.simple_tag
def sso_buttons():
    return sign_in_context()


@register.simple_tag
def password_login():
    return settings.SHERLOCK_PASSWORD_LOGIN
