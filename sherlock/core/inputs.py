"""What a caller may put in a URL and a form: the rules every page and endpoint that
reads a path, a query string or a form body shares, so no input reaches a 500.

- NUL: PostgreSQL stores no NUL character in text (a query naming one answers a `DataError`,
  a 500), so a path, a query string or a form body carrying one (raw or as `%00`) is refused
  whole, before any view reads it (`sherlock.core.middleware.RefuseNulMiddleware`); JSON bodies
  are refused by the API's parser (`sherlock.core.api.parsers.loads_bounded`).
- Integers: every id and number column fits a 64-bit signed integer (`INT64_MIN`..`INT64_MAX`),
  and SQLite cannot even be asked about a larger one (`OverflowError`). Django bounds the lookups
  of integer columns itself, not those of foreign keys (`run_id=2**63`) nor `__in`, so an id
  read from a query string goes through `parse_id` (pages) or `IdFilter` (API filters).
"""

from urllib.parse import unquote_to_bytes

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

FORM_MEDIA_TYPE = "application/x-www-form-urlencoded"


def has_nul_in_url_text(text: str | bytes) -> bool:
    """Whether `text` (a raw query string or form body: bytes or str) holds a NUL, raw or
    percent-encoded (`%00`; `%2500` is the three characters `%00`, not a NUL)."""
    raw = text.encode("latin-1", "replace") if isinstance(text, str) else text
    return b"\x00" in raw or b"\x00" in unquote_to_bytes(raw)


def nul_in_request(request: HttpRequest) -> tuple[str, str | None] | None:
    """Where a NUL is in `request`, as (place, field): ("path", None), ("query", the first query
    parameter holding one, or None when it is in a name), ("body", None) for a form body; else
    None. A multipart body is not read here: uploads are parsed, and refused, by their own
    readers."""
    if "\x00" in request.path:
        return "path", None
    query = request.META.get("QUERY_STRING", "")
    if has_nul_in_url_text(query):
        named = (
            name
            for name, values in request.GET.lists()
            if "\x00" not in name and any("\x00" in value for value in values)
        )
        return "query", next(named, None)
    if request.content_type == FORM_MEDIA_TYPE and request.method not in ("GET", "HEAD"):
        try:
            body = request.body  # kept by Django: the view reads it again
        except RequestDataTooBig:
            return None  # refused (400) where the view reads it, as without this check
        if has_nul_in_url_text(body):
            return "body", None
    return None


def parse_id(raw: str | None) -> int | None:
    """`raw` (a query parameter's text) as a positive id that a database can be asked about,
    or None: ASCII digits only ("²" is a digit to `str.isdigit`, not to `int`), 1..INT64_MAX."""
    if not raw or not (raw.isascii() and raw.isdigit()):
        return None
    number = int(raw)
    return number if 1 <= number <= INT64_MAX else None
