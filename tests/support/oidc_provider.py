"""A real OpenID Connect provider on loopback, in a second process, for the SSO tests.

`oidc-provider-mock` (PyPI) is a working provider built on Authlib: discovery, JWKS-signed ID
tokens, the authorization code flow, the nonce (required here: `--require-nonce`), userinfo,
any claims per subject (set with `PUT /users/<sub>`, here `set_user`), and an
`end_session_endpoint`. Its sign-in page asks for the subject to sign in as, which the browser
test types, as a person would type their name at their organisation's provider.

The browser tests' `provider` fixture (tests/browser/conftest.py) runs one; `sso_sign_in` is how
a person signs in through it.
"""

import json
import socket
import subprocess
import sys
import urllib.request

from tests.support.workers import wait_for


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class OIDCProvider:
    def __init__(self, log_path):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "oidc_provider_mock",
                "--port",
                str(self.port),
                "--require-nonce",
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

        def answers():
            try:
                with urllib.request.urlopen(f"{self.url}/.well-known/openid-configuration") as r:
                    return r.status == 200
            except OSError:
                return False

        if not wait_for(answers, timeout=30):
            self.stop()
            raise RuntimeError(f"the OIDC provider did not start: {log_path.read_text()}")

    def discovery(self):
        with urllib.request.urlopen(f"{self.url}/.well-known/openid-configuration") as answer:
            return json.load(answer)

    def set_user(self, sub, claims):
        """The claims the provider will sign for `sub` from now on (its next sign-in)."""
        request = urllib.request.Request(
            f"{self.url}/users/{sub}",
            data=json.dumps(claims).encode(),
            method="PUT",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request) as answer:
            assert answer.status == 204

    def env(self, provider_id="corp", name="Corp sign-in"):
        """The page server's settings for this provider (docs/sso.md)."""
        prefix = f"SHERLOCK_OIDC_{provider_id.upper()}_"
        return {
            "SHERLOCK_OIDC_PROVIDERS": provider_id,
            prefix + "SERVER_URL": self.url,
            prefix + "CLIENT_ID": "sherlock",
            prefix + "SECRET": "sherlock-secret",
            prefix + "NAME": name,
        }

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)
        self._log.close()


def sso_sign_in(page, server, sub, requests=None):
    """Sign in with the provider's button on Sherlock's sign-in page; at the provider, type the
    subject and authorize. `requests`, a list, gets the provider's authorization URL."""
    page.goto(f"{server}/accounts/login/")
    page.click("form.sso button")
    page.wait_for_selector("input[name=sub]")
    if requests is not None:
        requests.append(page.url)
    page.fill("input[name=sub]", sub)
    page.click("button:has-text('Authorize')")
    page.wait_for_load_state()
