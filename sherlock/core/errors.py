"""Domain errors raised by actions in every app; the API maps them to 403, 409 and 400.

They live in the kernel, below every app, so that every app can raise them.
"""


class ActionError(Exception):
    code = "action_error"

    def __init__(self, message, *, code=None, field=None):
        super().__init__(message)
        if code:
            self.code = code
        self.field = field


class ActionDenied(ActionError):
    """The acting user may not do this (403)."""

    code = "permission_denied"


class ActionConflict(ActionError):
    """The object's state forbids this now (409): already published, decision blocked, ..."""

    code = "conflict"


class ActionInvalid(ActionError):
    """The input is wrong (400); `field` names the field at fault."""

    code = "invalid"
