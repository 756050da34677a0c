"""Domain errors raised by actions in every app; the API maps them to 403, 409 and 400.

They live in the kernel, below every app, so that every app can raise them.
"""

from collections.abc import Iterable


class ActionError(Exception):
    code = "action_error"
    # A denial or refusal an error of its own kind holds (`refusal_in`), audited as such.
    refusal: "ActionError | None" = None

    def __init__(self, message: str, *, code: str | None = None, field: str | None = None) -> None:
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


class ActionRefused(ActionInvalid):
    """The input names what an operator's rule refuses (an environment variable or a host:
    `sherlock.core.egress`): 400 on its field like any invalid input, and audited like a
    denial (`sherlock.core.actions`), since trying to send a secret somewhere is evidence."""

    code = "egress_refused"


class InvalidFields(ActionInvalid):
    """Several fields are wrong at once (400): `errors` lists every one, an `ActionInvalid`
    naming its field each, in the order found. Its message is theirs joined with "; ", its code
    and field the first one's. The API answers every one
    (`sherlock.core.api.errors.exception_handler`: the first at the top, all under `errors`);
    the admin puts each on its field."""

    def __init__(self, errors: Iterable[ActionError]) -> None:
        errors = list(errors)
        first = errors[0]
        super().__init__("; ".join(map(str, errors)), code=first.code, field=first.field)
        self.errors = errors


def raise_invalid(errors: Iterable[ActionError]) -> None:
    """Refuse with every error of `errors` (ActionInvalid each) at once: nothing when there is
    none, the error itself when there is one, `InvalidFields` when there are several."""
    errors = list(errors)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise InvalidFields(errors)


def each_error(exc: ActionError) -> list[ActionError]:
    """The errors `exc` holds, each naming its field: every one of `InvalidFields`, else `exc`
    itself. What a form puts on its fields, one by one."""
    return list(exc.errors) if isinstance(exc, InvalidFields) else [exc]


def refusal_in(exc: BaseException) -> ActionError | None:
    """The denial or refusal `exc` is (ActionDenied, ActionRefused) or holds (the first among
    InvalidFields' errors, or the one an error of its own kind keeps as `refusal`: an import's
    bad rows), or None: what is audited as `<app>.<noun>.refused`. A case whose verifier names
    Sherlock's secret and whose tags are wrong is refused with both errors, and trying to send
    the secret is evidence all the same."""
    if isinstance(exc, ActionDenied | ActionRefused):
        return exc
    held = getattr(exc, "refusal", None)
    if isinstance(held, ActionDenied | ActionRefused):
        return held
    if isinstance(exc, InvalidFields):
        return next((e for e in exc.errors if isinstance(e, ActionDenied | ActionRefused)), None)
    return None
