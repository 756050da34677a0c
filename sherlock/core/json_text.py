"""JSON from outside, read one way: `loads` is the one parser of what Sherlock is sent (an API
body, a tracer's spans, a case file, a trial file). Duplicate members, nesting deeper than
`JSON_MAX_DEPTH`, NaN, Infinity, numbers out of range, integers longer than Python reads, NUL
and lone surrogate escapes are refused as `JSONRefused`, each with its offset in the text and
the member path to it, and never as a RecursionError; `line_and_column` turns the offset into
the place a person reads. Recorded text (a tracer's spans) keeps its NULs and lone surrogates,
each replaced by U+FFFD; a trial file's numbers are read as `Decimal`, exact from the first
byte."""

import json
import math
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from sherlock.core.limits import JSON_MAX_DEPTH, excerpt
from sherlock.core.text import scrub


class JSONRefused(ValueError):
    """JSON text that is not taken: `offset` is where in the text (None: unknown), `field` the
    members down to the place (`metadata.tags`, "" for the top)."""

    def __init__(self, message: str, offset: int | None = None, field: str = "") -> None:
        self.message, self.offset, self.field = message, offset, field
        super().__init__(message)


class JSONTooDeep(JSONRefused):
    """Nesting deeper than `JSON_MAX_DEPTH` (the API answers it with its own code)."""


def line_and_column(text: str, offset: int) -> tuple[int, int]:
    """(line, column), both from 1, of `offset` in `text`."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


class _Duplicate(Exception):  # not a ValueError: the parser must not turn it into its own
    def __init__(self, name: str) -> None:
        self.name = name


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = {}
    for name, value in pairs:
        if name in obj:
            raise _Duplicate(name)
        obj[name] = value
    return obj


class _Literal(Exception):  # not a ValueError either: a number or constant the reader refuses
    def __init__(self, message: str, literal: str) -> None:
        self.message, self.literal = message, literal


def _constant(name: str) -> Any:
    raise _Literal(f"{name} is not JSON", name)


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise _Literal(f"number out of range: {excerpt(text)}", text)
    return number


def _integer(text: str) -> int:
    # Python refuses to convert more than sys.get_int_max_str_digits() (4,300) digits with a
    # ValueError the scanner would hand on as it is: refused here, with its place.
    try:
        return int(text)
    except ValueError:
        digits = len(text.lstrip("-"))
        raise _Literal(f"an integer of {digits} digits (at most 4300)", text) from None


# The C scanner with the hooks: duplicate members, NaN/Infinity, 1e400 and integers of more than
# 4,300 digits refused as it reads; one decoder per way of reading a number with a fraction.
_DECODERS: dict[Callable[[str], Any], json.JSONDecoder] = {
    reader: json.JSONDecoder(
        object_pairs_hook=_pairs, parse_constant=_constant, parse_float=reader, parse_int=_integer
    )
    for reader in (_finite, Decimal)
}
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:]')
# The tokens again, with numbers and constants: to find where a refused literal is.
_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:]|-?[0-9][0-9.eE+-]*|-?Infinity|NaN')
# What PostgreSQL's jsonb and a UTF-8 export cannot hold: NUL and a lone surrogate (a `\ud800`
# escape without its pair; a pair is read as the one character it stands for).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
SPACE = re.compile(r"[ \t\r\n]*")


def after_space(text: str, at: int = 0) -> int:
    """Where the first character at or after `at` that is not JSON white space is."""
    match = SPACE.match(text, at)
    return match.end() if match else at  # (the pattern matches the empty string: always)


def _place(
    text: str, start: int = 0, max_depth: int = JSON_MAX_DEPTH
) -> tuple[int, str, str] | None:
    """(offset, field, message) of the first place in JSON `text` (from `start`) that nests
    deeper than `max_depth` or repeats a member, or None. A flat scan of the tokens (strings
    whole, so brackets inside them do not count): no recursion, and only run once the parser
    has refused (or the value is too deep), so it costs nothing on a good file."""
    # One [is_object, names seen, the current member] per open array or object.
    stack: list[list[Any]] = []
    last = None
    for match in _TOKEN.finditer(text, start):
        token = match.group()
        if token in ("[", "{"):
            stack.append([token == "{", set(), None])
            if len(stack) > max_depth:
                return match.start(), _path(stack), f"nested deeper than {max_depth} levels"
        elif token in ("]", "}"):
            if stack:
                stack.pop()
            if not stack:
                return None  # the value ends here
        elif token == ":":
            if stack and stack[-1][0]:
                if last in stack[-1][1]:
                    stack[-1][2] = last
                    return match.start(), _path(stack), f"duplicate member {excerpt(last)}"
                stack[-1][1].add(last)
                stack[-1][2] = last
        else:
            try:
                last = json.loads(token)
            except ValueError:
                last = token[1:-1]
    return None


def _literal_place(text: str, start: int, literal: str) -> tuple[int, str]:
    """(offset, field) of the first number or constant `literal` in the JSON value at `start`:
    a flat scan of the tokens, as `_place`, run only once the parser has refused it."""
    stack: list[Any] = []
    last = None
    for match in _LITERAL.finditer(text, start):
        token = match.group()
        if token == literal:
            return match.start(), _path(stack)
        if token in ("[", "{"):
            stack.append([token == "{", None, None])
        elif token in ("]", "}"):
            if stack:
                stack.pop()
            if not stack:
                break
        elif token == ":":
            if stack and stack[-1][0]:
                stack[-1][2] = last
        elif token.startswith('"'):
            try:
                last = json.loads(token)
            except ValueError:
                last = token[1:-1]
    return start, ""


def _path(stack: list[list[Any]], limit: int = 3) -> str:
    names = [str(frame[2]) for frame in stack if frame[0] and frame[2] is not None]
    return ".".join(names[:limit]) + (".…" if len(names) > limit else "")


def _check_value(
    value: Any, unstorable: bool = True, max_depth: int = JSON_MAX_DEPTH
) -> tuple[bool, str | None, str | None]:
    """(depth exceeded, path of a NUL or lone surrogate, which of the two) of a parsed value, in
    one walk without recursion; `unstorable` False: the depth alone."""
    stack = [(value, 1, "")]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, str):
            found = _UNSTORABLE.search(node) if unstorable else None
            if found:
                return False, path, found.group()
            continue
        if isinstance(node, dict):
            if depth > max_depth:
                return True, path, None
            for name, child in node.items():
                child_path = f"{path}.{name}" if path else str(name)
                found = _UNSTORABLE.search(name) if unstorable else None
                if found:
                    return False, child_path, found.group()
                stack.append((child, depth + 1, child_path))
        elif isinstance(node, list):
            if depth > max_depth:
                return True, path, None
            stack.extend((child, depth + 1, f"{path}[{i}]") for i, child in enumerate(node))
    return False, None, None


def _refusal(text: str, start: int, default: str, max_depth: int) -> JSONRefused:
    found = _place(text, start, max_depth)
    if found is None:
        kind = JSONTooDeep if default.startswith("nested") else JSONRefused
        return kind(default, start, "")
    offset, path, message = found
    kind = JSONTooDeep if message.startswith("nested") else JSONRefused
    return kind(message + (f" (in {path})" if path else ""), offset, path)


def decode_at(
    text: str,
    start: int = 0,
    *,
    floats: Callable[[str], Any] = _finite,
    max_depth: int = JSON_MAX_DEPTH,
) -> tuple[Any, int]:
    """(value, end) of the JSON value at `start` in `text`, a number with a fraction read by
    `floats` (a finite float, or `Decimal`); JSONRefused says why not."""
    try:
        return _DECODERS[floats].raw_decode(text, start)
    except _Literal as exc:
        offset, path = _literal_place(text, start, exc.literal)
        where = f" (in {path})" if path else ""
        raise JSONRefused(exc.message + where, offset, path) from None
    except json.JSONDecodeError as exc:
        raise JSONRefused(f"not JSON ({exc.msg}, column {exc.colno})", exc.pos) from None
    except RecursionError:
        raise _refusal(text, start, f"nested deeper than {max_depth} levels", max_depth) from None
    except _Duplicate as exc:
        message = f"duplicate member {excerpt(exc.name)}"
        raise _refusal(text, start, message, max_depth) from None


def check_decoded(
    value: Any, text: str, start: int, *, recorded: bool = False, max_depth: int = JSON_MAX_DEPTH
) -> Any:
    """`value`, decoded from `text` at `start`, refused when it nests too deep or holds a NUL or
    a lone surrogate; `recorded` text keeps those, each replaced by U+FFFD."""
    too_deep, path, char = _check_value(value, not recorded, max_depth)
    if too_deep:
        raise _refusal(text, start, f"nested deeper than {max_depth} levels", max_depth)
    if recorded:
        return scrub(value)
    if path is not None and char is not None:
        where = f" (in {path})" if path else ""
        what = (
            "NUL (\\u0000) is not allowed"
            if char == "\x00"
            else f"a lone surrogate (\\u{ord(char):04x}, half of a pair) is not text"
        )
        raise JSONRefused(what + where, start, path.split("[")[0])
    return value


def loads(
    text: str,
    *,
    floats: Callable[[str], Any] = _finite,
    recorded: bool = False,
    max_depth: int = JSON_MAX_DEPTH,
) -> Any:
    """The value of the JSON text `text`: JSONRefused (with the offset and field of the place
    when known) for text that is not JSON, a member given twice in one object, nesting deeper
    than `max_depth` (JSONTooDeep, the parser's RecursionError included), NaN, Infinity, a
    number out of range or an integer of more than 4,300 digits (Python's own limit of
    conversion), and a NUL character or a lone surrogate escape (`"\\ud800"`) in a string or
    member name (PostgreSQL stores neither, and no UTF-8 export can write the second), unless
    the text is `recorded`. `floats` reads a number with a fraction (`Decimal`: exact)."""
    start = after_space(text)
    value, end = decode_at(text, start, floats=floats, max_depth=max_depth)
    if after_space(text, end) != len(text):  # (no copy of a long rest of the text)
        raise JSONRefused(f"not JSON (extra data after the value, column {end + 1})", end)
    return check_decoded(value, text, start, recorded=recorded, max_depth=max_depth)
