"""Text a database can hold, by one rule for the whole project (docs/api.md, "Text").

PostgreSQL keeps no NUL character in text or jsonb (a `DataError`), and no encoding writes a
lone surrogate (`"\\ud800"` is valid JSON, but no text). Which of the two answers applies
depends on who wrote the text:

- **Authored** text, what a person or their program states (API bodies, case files, forms,
  addresses and queries, a client's settings): **refused**, with a 400 (or the form's, the
  import's error) naming the field or the line. Nothing is written. `has_unstorable` finds it.
- **Recorded** text, what Sherlock observed (a tracer's spans and the trials built from them,
  an agent's or a task's output, a judge's answer, the audit log quoting a refused input):
  **kept, with every NUL and lone surrogate replaced by U+FFFD** (`scrub`), so that one odd
  character never loses a record nor stops the work that reads it, and the replacement shows
  where it was.
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"
NUL = "\x00"
# A NUL or a lone surrogate: what no database column nor UTF-8 export keeps.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def scrub_text(text: str) -> str:
    """`text` with every NUL and lone surrogate replaced by U+FFFD. ASCII text (CPython knows
    it without a scan) can hold no surrogate: only the NUL is looked for, as `in` does, which
    keeps this off the receiver's profile (every attribute string goes through it)."""
    if text.isascii():
        return text.replace(NUL, REPLACEMENT) if NUL in text else text
    return _UNSTORABLE.sub(REPLACEMENT, text) if _UNSTORABLE.search(text) else text


def scrub(value: Any) -> Any:
    """`value` (a JSON document: strings, numbers, and the keys and items of dicts, lists and
    tuples) with every string scrubbed (`scrub_text`). Walked without recursion limits being
    reached for documents the receiver accepts (their depth is bounded on entry)."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        return {scrub(key): scrub(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(scrub(item) for item in value)
    return value


def has_unstorable(value: Any, *, surrogates: bool = True) -> bool:
    """Whether a NUL (or, with `surrogates`, a lone surrogate) is in any string or key of the
    JSON document `value`: authored text holding one is refused."""
    pattern = _UNSTORABLE if surrogates else _NUL_ONLY
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if pattern.search(node):
                return True
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
    return False


_NUL_ONLY = re.compile("\x00")
