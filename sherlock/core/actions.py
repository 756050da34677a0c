"""The action template every app uses (STYLE.md items 2-3).

An action is one verb on the domain. `check()` answers "may this user do it now?" (the UI uses
it to show or hide a button) by raising `ActionDenied` or `ActionConflict`; `execute()` calls
`check()` again inside `transaction.atomic()`, makes the change and writes the audit entry in
the same transaction. Admin actions, API views, htmx views, commands and tasks all call actions.
"""

from abc import ABC, abstractmethod

from django.db import transaction

from sherlock.core.limits import check_document, check_text


class Action(ABC):
    # Input bounds (sherlock.core.limits), checked first by execute(), before check() reads
    # anything: attribute name -> at most that many characters (text) or bytes (JSON).
    text_limits = {}
    document_limits = {}

    def __init__(self, *, acting_user):
        self.acting_user = acting_user

    def check_limits(self):
        """ActionInvalid (`too_long`, `too_large`, `too_deep`) naming the first attribute
        beyond its bound: a 1 MB reason is refused before it reaches the audit log."""
        for name, maximum in self.text_limits.items():
            check_text(name, getattr(self, name, None), maximum)
        for name, maximum in self.document_limits.items():
            check_document(name, getattr(self, name, None), maximum)

    def check(self):  # noqa: B027 - an action with no precondition keeps this default
        """Raise ActionDenied / ActionConflict / ActionInvalid when the action may not run."""

    def allowed(self):
        from sherlock.core.errors import ActionError

        try:
            self.check()
        except ActionError:
            return False
        return True

    def execute(self):
        with transaction.atomic():
            self.check_limits()
            self.check()
            return self.perform()

    @abstractmethod
    def perform(self):
        """Make the change; runs inside execute()'s transaction, after check()."""
