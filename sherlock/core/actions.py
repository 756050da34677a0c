"""The action template every app uses.

An action is one verb on the domain. `check()` answers "may this user do it now?" (the UI uses
it to show or hide a button) by raising `ActionDenied` or `ActionConflict`; `execute()` calls
`check()` again inside `transaction.atomic()`, makes the change and writes the audit entry in
the same transaction. Admin actions, API views, htmx views, commands and tasks all call actions.

A refusal of the user's rights (`ActionDenied`, answered 403) is evidence in its own right ("a
Publisher tried to create a draft"), and so is input an operator's rule refuses
(`ActionRefused`: a config naming a secret or a host not allowed, `sherlock.core.egress`), so
`execute()` records either as `<app>.<noun>.refused` with the verb, the error code and the
message, after the action's transaction has rolled back (a
caller that wraps `execute()` in a transaction of its own must write it again after its own
rollback: `audit_refusal`). Governance actions record every refusal, state and input included
(`audits_every_refusal`). Two hooks complete the template: `prepare()` before the transaction,
`lock()` first inside it.
"""

from abc import ABC, abstractmethod
from typing import Any

from django.db import models, transaction

from sherlock.core.audit import audit
from sherlock.core.errors import ActionError, refusal_in
from sherlock.core.limits import check_document, check_text


class Action(ABC):
    # The audit code's noun and verb (`<app>.<noun>.<verb>`, and `<app>.<noun>.refused` with the
    # verb for a refusal), declared by every action: the log's vocabulary must not change when
    # a module is renamed (tests/test_audit_codes.py lists every code once).
    noun = ""
    verb = ""
    # Which refusals the log records: the denials of a role and the refusals of an operator's
    # rule (False), or every refusal, state and input included (governance's verbs, where a
    # refused publish or bypass is evidence in its own right).
    audits_every_refusal = False
    # Input bounds (sherlock.core.limits), checked first by execute(), before check() reads
    # anything: attribute name -> at most that many characters (text) or bytes (JSON).
    text_limits: dict[str, int] = {}
    document_limits: dict[str, int] = {}

    def __init__(self, *, acting_user: Any) -> None:
        self.acting_user = acting_user

    def check_limits(self) -> None:
        """ActionInvalid (`too_long`, `too_large`, `too_deep`) naming the first attribute
        beyond its bound: a 1 MB reason is refused before it reaches the audit log."""
        for name, maximum in self.text_limits.items():
            check_text(name, getattr(self, name, None), maximum)
        for name, maximum in self.document_limits.items():
            check_document(name, getattr(self, name, None), maximum)

    def check(self) -> None:  # noqa: B027 - an action with no precondition keeps this default
        """Raise ActionDenied / ActionConflict / ActionInvalid when the action may not run."""

    def check_role(self) -> None:  # noqa: B027 - most actions have no role check apart from check()
        """The part of check() that depends on the acting user's role alone, not on the input:
        `authorize()` asks it before a view reads a body."""

    def authorize(self) -> None:
        """Refuse, audited like any refusal, a user whose role forbids the verb whatever the
        input: a page or the API asks this before reading a body, so who may not act is
        answered 403, learns nothing from validation (which names or slugs exist), and the
        refused attempt is in the log like every other."""
        try:
            self.check_role()
        except ActionError as exc:
            self.audit_refusal(exc)
            raise

    def allowed(self) -> bool:
        try:
            self.check()
        except ActionError:
            return False
        return True

    def prepare(self) -> None:  # noqa: B027 - most actions have nothing to commit first
        """Work committed before the transaction, kept even when the action is then refused (an
        expired bypass becomes `expired` when it is touched)."""

    def lock(self) -> None:  # noqa: B027 - most actions read nothing they must lock
        """Row locks (`select_for_update`) and fresh copies of what check() reads: the first
        thing in the transaction, so the check is made on the state being changed."""

    def execute(self) -> Any:
        """The template: the input's bounds, `prepare()`, then `execute_in_transaction()`; a
        refusal is recorded after the rollback (`audit_refusal`)."""
        try:
            self.check_limits()  # before anything is read or written
            self.prepare()
            return self.execute_in_transaction()
        except ActionError as exc:
            # Every refusal, or only the denials and operator refusals (with the one among
            # several invalid fields): `audits_every_refusal`.
            refusal = exc if self.audits_every_refusal else refusal_in(exc)
            if refusal is not None:
                self.audit_refusal(refusal)
            raise

    def execute_in_transaction(self) -> Any:
        """lock(), check() and perform() in one transaction; an action whose verb is made of
        other actions (each with its own transaction) overrides this, not execute()."""
        with transaction.atomic():
            self.lock()
            self.check()
            return self.perform()

    @abstractmethod
    def perform(self) -> Any:
        """Make the change; runs inside execute()'s transaction, after check()."""

    def audit_code(self, verb: str | None = None, noun: str | None = None) -> str:
        """`<app>.<noun>.<verb>` of this action's success, built from what it declares; `verb`
        or `noun` name another entry the same verb writes (a publish retires the version it
        replaces: `governance.version.retire`)."""
        app, declared_noun, declared_verb = self.refusal_names()
        return f"{app}.{noun or declared_noun}.{verb or declared_verb}"

    def audit(self, *, verb: str | None = None, noun: str | None = None, **entry: Any) -> Any:
        """Write this action's entry (`audit_code`), as the acting user unless `actor` is given;
        `entry` is what `sherlock.core.audit.audit` takes (target, before, after, reason)."""
        entry.setdefault("actor", self.acting_user)
        return audit(self.audit_code(verb, noun), **entry)

    def refusal_names(self) -> tuple[str, str, str]:
        """(app, noun, verb) of this action's refusal code: the app its package is in, and the
        noun and verb it declares."""
        if not (self.noun and self.verb):
            raise TypeError(f"{type(self).__name__} declares no audit noun and verb")
        return type(self).__module__.split(".")[0], self.noun, self.verb

    def refusal_target(self) -> models.Model | None:
        """The object a refusal is recorded against: the first model instance the action was
        given (the dataset version a case goes into, the run to cancel), else none."""
        for value in vars(self).values():
            if isinstance(value, models.Model) and value is not self.acting_user:
                return value
        return None

    def audit_refusal(self, exc: ActionError) -> None:
        app, noun, verb = self.refusal_names()
        audit(
            f"{app}.{noun}.refused",
            actor=self.acting_user,
            target=self.refusal_target(),
            after={"verb": verb, "code": exc.code},
            reason=str(exc),
        )
