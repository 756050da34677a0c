"""Refusals logged as one line: Django's request log hands every 403 its exception
(`django.core.handlers.exception.response_for_exception` logs "Forbidden (Permission denied):
/path" with ``exc_info``), so each refused click printed a whole traceback on the console and
buried the errors that need one. A refusal is an expected answer, already in the audit log when
an action refused it (`sherlock.core.actions`); the console keeps its line: status, path, and
the reason.

Installed as a filter on the console handler (`LOGGING` in the settings), so every logger's
records pass through it; a real error (a 500) keeps its traceback.
"""

import logging

from django.core.exceptions import PermissionDenied

from sherlock.core.errors import ActionDenied

REFUSALS = (PermissionDenied, ActionDenied)


def is_refusal(record: logging.LogRecord) -> bool:
    """A 403 answer, or a record whose exception is a refusal (PermissionDenied, ActionDenied)."""
    if record.exc_info and isinstance(record.exc_info[1], REFUSALS):
        return True
    return getattr(record, "status_code", None) == 403


class OneLineRefusals(logging.Filter):
    """Drops the traceback of a refusal's record and names the refusal's reason on its line:
    "Forbidden (Permission denied): /admin/agents/agent/ (only an Admin may ...)"."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and is_refusal(record):
            reason = str(record.exc_info[1] or "").strip()
            message = record.getMessage()
            if reason and reason not in message:
                message = f"{message} ({reason})"
            record.msg, record.args = message.replace("\n", " "), ()
            record.exc_info = None
            record.exc_text = None
        return True
