"""JSON, read one way by every import path: `loads` is the one parser of case files (and of
the API's JSON list of cases). Duplicate members, nesting deeper than `JSON_MAX_DEPTH`, NaN,
Infinity, numbers out of range, integers longer than Python reads, NUL and lone surrogate
escapes are refused as `JSONRefused`, each with its offset in the text and the member path to
it, and never as a RecursionError; the reader turns the offset into a line."""

import json
import math
import re

from sherlock.core.limits import JSON_MAX_DEPTH, excerpt


class JSONRefused(ValueError):
    """JSON text that an import does not take: `offset` is where in the text (None: unknown),
    `field` the members down to the place (`metadata.tags`, "" for the top)."""

    def __init__(self, message, offset=None, field=""):
        self.message, self.offset, self.field = message, offset, field
        super().__init__(message)


class _Duplicate(Exception):  # not a ValueError: the parser must not turn it into its own
    def __init__(self, name):
        self.name = name


def _pairs(pairs):
    obj = {}
    for name, value in pairs:
        if name in obj:
            raise _Duplicate(name)
        obj[name] = value
    return obj


class _Literal(Exception):  # not a ValueError either: a number or constant the reader refuses
    def __init__(self, message, literal):
        self.message, self.literal = message, literal


def _constant(name):
    raise _Literal(f"{name} is not JSON", name)


def _finite(text):
    number = float(text)
    if not math.isfinite(number):
        raise _Literal(f"number out of range: {excerpt(text)}", text)
    return number


def _integer(text):
    # Python refuses to convert more than sys.get_int_max_str_digits() (4,300) digits with a
    # ValueError the scanner would hand on as it is: refused here, with its place.
    try:
        return int(text)
    except ValueError:
        digits = len(text.lstrip("-"))
        raise _Literal(f"an integer of {digits} digits (at most 4300)", text) from None


# The C scanner with the hooks: duplicate members, NaN/Infinity, 1e400 and integers of more than
# 4,300 digits refused as it reads.
_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_finite, parse_int=_integer
)
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:]')
# The tokens again, with numbers and constants: to find where a refused literal is.
_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:]|-?[0-9][0-9.eE+-]*|-?Infinity|NaN')
# What PostgreSQL's jsonb and a UTF-8 export cannot hold: NUL and a lone surrogate (a `\ud800`
# escape without its pair; a pair is read as the one character it stands for).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
SPACE = re.compile(r"[ \t\r\n]*")


def _place(text, start=0):
    """(offset, field, message) of the first place in JSON `text` (from `start`) that nests
    deeper than JSON_MAX_DEPTH or repeats a member, or None. A flat scan of the tokens (strings
    whole, so brackets inside them do not count): no recursion, and only run once the parser
    has refused (or the value is too deep), so it costs nothing on a good file."""
    stack = []  # one [is_object, names seen, the current member] per open array or object
    last = None
    for match in _TOKEN.finditer(text, start):
        token = match.group()
        if token in ("[", "{"):
            stack.append([token == "{", set(), None])
            if len(stack) > JSON_MAX_DEPTH:
                return match.start(), _path(stack), f"nested deeper than {JSON_MAX_DEPTH} levels"
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


def _literal_place(text, start, literal):
    """(offset, field) of the first number or constant `literal` in the JSON value at `start`:
    a flat scan of the tokens, as `_place`, run only once the parser has refused it."""
    stack = []
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


def _path(stack, limit=3):
    names = [str(frame[2]) for frame in stack if frame[0] and frame[2] is not None]
    return ".".join(names[:limit]) + (".…" if len(names) > limit else "")


def _check_value(value):
    """(depth exceeded, path of a NUL or lone surrogate, which of the two) of a parsed value, in
    one walk without recursion."""
    stack = [(value, 1, "")]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, str):
            found = _UNSTORABLE.search(node)
            if found:
                return False, path, found.group()
            continue
        if isinstance(node, dict):
            if depth > JSON_MAX_DEPTH:
                return True, path, None
            for name, child in node.items():
                child_path = f"{path}.{name}" if path else str(name)
                found = _UNSTORABLE.search(name)
                if found:
                    return False, child_path, found.group()
                stack.append((child, depth + 1, child_path))
        elif isinstance(node, list):
            if depth > JSON_MAX_DEPTH:
                return True, path, None
            stack.extend((child, depth + 1, f"{path}[{i}]") for i, child in enumerate(node))
    return False, None, None


def _refusal(text, start, default):
    found = _place(text, start)
    if found is None:
        return JSONRefused(default, start, "")
    offset, path, message = found
    return JSONRefused(message + (f" (in {path})" if path else ""), offset, path)


def decode_at(text, start=0):
    """(value, end) of the JSON value at `start` in `text`; JSONRefused says why not."""
    try:
        return _DECODER.raw_decode(text, start)
    except _Literal as exc:
        offset, path = _literal_place(text, start, exc.literal)
        where = f" (in {path})" if path else ""
        raise JSONRefused(exc.message + where, offset, path) from None
    except json.JSONDecodeError as exc:
        raise JSONRefused(f"not JSON ({exc.msg}, column {exc.colno})", exc.pos) from None
    except RecursionError:
        raise _refusal(text, start, f"nested deeper than {JSON_MAX_DEPTH} levels") from None
    except _Duplicate as exc:
        raise _refusal(text, start, f"duplicate member {excerpt(exc.name)}") from None


def check_decoded(value, text, start):
    too_deep, path, char = _check_value(value)
    if too_deep:
        raise _refusal(text, start, f"nested deeper than {JSON_MAX_DEPTH} levels")
    if path is not None:
        where = f" (in {path})" if path else ""
        what = (
            "NUL (\\u0000) is not allowed"
            if char == "\x00"
            else f"a lone surrogate (\\u{ord(char):04x}, half of a pair) is not text"
        )
        raise JSONRefused(what + where, start, path.split("[")[0])
    return value


def loads(text):
    """The value of the JSON text `text`, as every import reads JSON: JSONRefused (with the
    offset and field of the place when known) for text that is not JSON, a member given twice
    in one object, nesting deeper than JSON_MAX_DEPTH (the parser's RecursionError included),
    NaN, Infinity, a number out of range or an integer of more than 4,300 digits (Python's own
    limit of conversion), and a NUL character or a lone surrogate escape (`"\\ud800"`) in a
    string or member name (PostgreSQL stores neither, and no UTF-8 export can write the
    second)."""
    start = SPACE.match(text).end()
    value, end = decode_at(text, start)
    if SPACE.match(text, end).end() != len(text):  # (no copy of a long rest of the text)
        raise JSONRefused(f"not JSON (extra data after the value, column {end + 1})", end)
    return check_decoded(value, text, start)
