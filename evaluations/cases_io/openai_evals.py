"""OpenAI evals samples (JSONL): `{"input": [chat messages], "ideal": "..."}` a line.

    {"input": [{"role": "system", "content": "Be brief."},
               {"role": "user", "content": "Capital of France?"}], "ideal": "Paris"}

- `input`: chat messages (or plain text). A lone user message becomes the case's input text;
  any other list is kept whole as `{"messages": [...]}`.
- `ideal`: text, or a list of acceptable answers: the first is `expected.output`, and a list of
  more than one is kept as `expected.ideal`.
- the key: `id`, else `metadata.key` or `metadata.id`, else `oe-` and a hash of the input
  (`derived_key`); `metadata.tags` (a list) becomes the tags. Other metadata is not read.

Any other top-level field is refused (naming it), so nothing in the file is silently lost.
"""

from evaluations.cases_io import Row, RowError, derived_key, parse_json_lines
from sherlock.core.limits import excerpt

KNOWN = {"input", "ideal", "id", "metadata"}


def _input(value):
    if isinstance(value, str):
        return value
    if not isinstance(value, list) or not value:
        raise ValueError("input: must be a list of chat messages or text")
    for i, message in enumerate(value):
        if not (isinstance(message, dict) and "role" in message and "content" in message):
            raise ValueError(f"input[{i}]: a chat message needs role and content")
    if len(value) == 1 and value[0]["role"] == "user" and isinstance(value[0]["content"], str):
        return value[0]["content"]
    return {"messages": value}


def _expected(ideal):
    if isinstance(ideal, str):
        return {"output": ideal}
    if isinstance(ideal, list) and ideal and all(isinstance(i, str) for i in ideal):
        return {"output": ideal[0], **({"ideal": ideal} if len(ideal) > 1 else {})}
    raise ValueError("ideal: must be text or a list of texts")


def read(text, errors):
    rows = []
    for n, obj in parse_json_lines(text, errors):
        # Every error of the line: its unknown fields, then each field that cannot be read.
        problems = [
            RowError(n, str(name)[:100], f"unknown field {excerpt(name)}")
            for name in sorted(set(obj) - KNOWN)
        ]
        if "input" not in obj:
            problems.append(RowError(n, "input", "input: needed"))
        metadata = obj.get("metadata") or {}
        if not isinstance(metadata, dict):
            problems.append(RowError(n, "metadata", "metadata: must be an object"))
            metadata = {}
        fields = {}
        for name, source, reader in (("input", "input", _input), ("expected", "ideal", _expected)):
            if source in obj:
                try:
                    fields[name] = reader(obj[source])
                except ValueError as exc:
                    problems.append(RowError(n, str(exc).split(":", 1)[0], str(exc)))
        if "tags" in metadata:
            fields["tags"] = metadata["tags"]
        errors += problems
        if "input" not in obj:
            continue  # no input: no key can be derived, and no case
        key = obj.get("id") or metadata.get("key") or metadata.get("id")
        rows.append(Row(n, key or derived_key("oe", obj["input"]), fields, faulty=bool(problems)))
    return rows
