"""Why an ask failed: the error codes of `JudgeAnswer.error_code`, and how a message is clipped.

The codes are for check reasons and filters. The transport ones (rate limited, server error,
timeout, connection refused, name not found, TLS, other connection failures, other HTTP
status) are decided by the retry policy (`retry.py`), the
answer ones (malformed, refused) when the answer is read (`answers.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

RATE_LIMITED = "rate_limited"
SERVER_ERROR = "server_error"
TIMEOUT = "timeout"
# Why a connection failed, by its cause: nothing listens there, the host name is not known, TLS
# failed (a certificate, a plain-HTTP server behind https://), anything else (reset, closed).
CONNECTION_REFUSED = "connection_refused"
NAME_NOT_FOUND = "name_not_found"
TLS = "tls"
CONNECTION = "connection"
HTTP_ERROR = "http_error"
MALFORMED = "malformed"
REFUSED = "refused"
# An answer cut off at the completion cap (finish_reason "length"): re-asked fresh and briefer.
CUT_OFF = "cut_off"

# The codes of a judge that did not answer (as against an answer that could not be used): a
# check's reason then starts with "judge unavailable", the words of a case state's reason
# (`JudgeAnswer.unavailable`, `evaluations.checks.scoring.JUDGE_UNAVAILABLE`).
TRANSPORT_CODES = frozenset(
    (
        RATE_LIMITED,
        SERVER_ERROR,
        TIMEOUT,
        CONNECTION_REFUSED,
        NAME_NOT_FOUND,
        TLS,
        CONNECTION,
        HTTP_ERROR,
    )
)

_MAX_ERROR_TEXT = 1000


@dataclass
class Failure:
    """A failed attempt or ask: the message a check shows, and its code."""

    error: str
    code: str


def clip(value) -> str:
    """`str(value)`, cut to what an error message stored on a row should hold."""
    text = str(value)
    return text if len(text) <= _MAX_ERROR_TEXT else text[: _MAX_ERROR_TEXT - 1] + "…"
