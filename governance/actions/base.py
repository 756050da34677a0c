"""The governance flavour of the action template: refusals are audited, and the record survives.

A refused publish or bypass is evidence in its own right ("a Publisher tried to bypass the
gate"), so it is written to the audit log as `governance.<noun>.refused` with the verb, the
error code and the message. It cannot be written inside the action's transaction, because the
refusal rolls that transaction back; `execute()` writes it after the rollback, on the caller's
connection (autocommit in a request, so it commits on its own). Callers must therefore not wrap
`execute()` in a transaction of their own if they want refusals kept.

Two hooks complete the template of `sherlock.core.actions.Action`:

- `prepare()` runs before the transaction and commits on its own: work that must outlive a
  refusal that may follow (an expired bypass becomes `expired` when it is touched);
- `lock()` runs first inside the transaction: row locks (`select_for_update` on the agent)
  and fresh copies of what `check()` reads, so the check is made on the state being changed.
"""

import re

from django.db import transaction

from sherlock.core.actions import Action
from sherlock.core.audit import audit
from sherlock.core.errors import ActionError, ActionInvalid
from sherlock.core.limits import REASON_MAX

MIN_REASON_LENGTH = 30


class GovernanceAction(Action):
    text_limits = {"reason": REASON_MAX}  # every governance verb that takes a reason
    noun = ""  # the audit code's noun: governance.<noun>.<verb>
    verb = ""

    def prepare(self):
        """Work committed before the transaction, kept even when the action is refused."""

    def lock(self):
        """Take row locks and reload what check() reads; first thing in the transaction."""

    def refusal_target(self):
        """The object a refusal is recorded against."""
        return None

    def execute(self):
        try:
            self.check_limits()  # before prepare(): nothing is written for oversized input
            self.prepare()
            with transaction.atomic():
                self.lock()
                self.check()
                return self.perform()
        except ActionError as exc:
            self.audit_refusal(exc)
            raise

    def audit_refusal(self, exc):
        audit(
            f"governance.{self.noun}.refused",
            actor=self.acting_user,
            target=self.refusal_target(),
            after={"verb": self.verb, "code": exc.code},
            reason=str(exc),
        )


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
