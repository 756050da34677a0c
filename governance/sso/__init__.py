"""Single sign-on through OpenID Connect, on django-allauth (docs/sso.md).

allauth runs the protocol (discovery, the authorization code flow with PKCE, the ID token's
signature, issuer and audience); this package adds what Sherlock needs on top: a nonce bound to
the sign-in (`provider`), the group-to-role mapping read from the claims (`claims`), the
refusals and the re-application of roles at every sign-in, and the provider's sign-out
(`adapter`).
"""
