"""`attest`: sign and store the statement of one release event, in the caller's transaction."""

import hashlib
from typing import Any

from django.conf import settings

from governance.attestations import dsse
from governance.attestations.keys import KeyUnavailable, keyid_of, registered, signing_key
from governance.attestations.statement import canonical, release_statement
from governance.models import Attestation
from sherlock.core.errors import ActionConflict


def attest(*, event: str, version: Any, actor: Any, **facts: Any) -> Attestation | None:
    """The attestation of `event` on `version`, signed and stored; None when attestations are
    off. A key that cannot be read refuses the action (`attestation_failed`): its transaction
    rolls back, so no version goes live unattested. `facts` are `release_statement`'s."""
    if not settings.SHERLOCK_ATTESTATIONS:
        return None
    try:
        key = signing_key()
    except KeyUnavailable as exc:
        raise ActionConflict(
            f"The release could not be attested, so nothing was changed: {exc}.",
            code="attestation_failed",
        ) from None
    public = key.public_key()
    registered(public)
    body = canonical(release_statement(event=event, version=version, actor=actor, **facts))
    return Attestation.objects.create(
        agent_version=version,
        event=event,
        envelope=dsse.sign(body, key, keyid_of(public)),
        digest=hashlib.sha256(body).hexdigest(),
        keyid=keyid_of(public),
    )
