"""The governance flavour of the action template: refusals are audited, and the record survives.

A refused publish or bypass is evidence in its own right ("a Publisher tried to bypass the
gate"), so it is written to the audit log as `governance.<noun>.refused` with the verb, the
error code and the message. It cannot be written inside the action's transaction, because the
refusal rolls that transaction back; `execute()` writes it after the rollback, on the caller's
connection (autocommit in a request, so it commits on its own). Callers must therefore not wrap
`execute()` in a transaction of their own if they want refusals kept.

Governance verbs use the template's two hooks (`sherlock.core.actions.Action`): `prepare()`,
committed before the transaction (work that must outlive a refusal that may follow), and
`lock()`, first inside it (row locks on the agent, fresh copies of what `check()` reads).
"""

import re

from governance.attestations.issue import attest
from sherlock.core.actions import Action
from sherlock.core.errors import ActionInvalid
from sherlock.core.limits import REASON_MAX

MIN_REASON_LENGTH = 30


class GovernanceAction(Action):
    text_limits = {"reason": REASON_MAX}  # every governance verb that takes a reason
    noun = ""  # the audit code's noun: governance.<noun>.<verb>
    verb = ""
    audits_every_refusal = True

    def refusal_target(self):
        """The object a refusal is recorded against."""
        return None

    def attest(self, event, version, **facts):
        """Sign the statement of `event` on `version` (`governance.attestations`) and audit it,
        in this action's transaction; nothing when attestations are off."""
        attestation = attest(event=event, version=version, actor=self.acting_user, **facts)
        if attestation is not None:
            self.audit(
                noun="attestation",
                verb="create",
                target=version,
                after={
                    "attestation": attestation.pk,
                    "event": event,
                    "digest": attestation.digest,
                    "keyid": attestation.keyid,
                },
            )
        return attestation


def substantive_reason(reason, *, minimum=MIN_REASON_LENGTH):
    """The reason, whitespace-normalised, or ActionInvalid when it says nothing.

    "Substantive" is approximated by what filler lacks: at least
    `minimum` characters, and at least four different words and eight different letters or
    digits, so "aaaa...", "asdf asdf asdf ..." and 30 spaces are refused while any real
    sentence passes.
    """
    text = " ".join((reason or "").split())
    if len(text) < minimum:
        raise ActionInvalid(
            f"A reason of at least {minimum} characters is required.", field="reason"
        )
    words = set(re.findall(r"[^\W\d_]{2,}", text.lower()))
    symbols = {c for c in text.lower() if c.isalnum()}
    if len(words) < 4 or len(symbols) < 8:
        raise ActionInvalid(
            "The reason must explain why in words, not repeat characters.", field="reason"
        )
    return text
