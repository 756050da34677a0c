"""promptfoo tests as CSV: one test a row, its `vars` as columns, `__expected` assertions.

    question,__expected
    "Capital of France?",Paris
    "Refund $20?","contains: approved"

- `input`: the one var's value as text; with several vars, an object `{var: value}`;
- `__expected` (and `__expected1`, `__expected2`, ...): a plain value or `equals: value` is
  `expected.output` (the first one); any other assertion (`contains:`, `llm-rubric:`,
  `javascript:` ...) is kept as written in `expected.assertions`, for reference: no Sherlock
  check reads it, so add the checks that should score it;
- the key: `__metadata:key` (or `__metadata:id`), else `pf-` and a hash of the input
  (`derived_key`); `__metadata:tags` (comma-separated) becomes the tags.

Other promptfoo columns (`__description`, `__prefix`, `__suffix`, `__threshold`, `__metric`,
`__config:*`, other `__metadata:*`) are not read.
"""

import re

from evaluations.cases_io import Row, RowError, csv_records, derived_key, header_errors

EXPECTED = re.compile(r"__expected\d*$")
# An assertion type ahead of the colon (promptfoo's assertion names, optionally `not-`):
# without one, the whole cell is the expected value ("Paris", or "Note: it rains").
ASSERTION = re.compile(
    r"(not-)?(equals|i?contains(-all|-any)?|starts-with|regex|is-json|contains-json|is-sql|"
    r"javascript|python|similar|llm-rubric|model-graded-\w+|factuality|answer-relevance|"
    r"context-\w+|levenshtein|webhook|rouge-n|bleu|classifier|moderation|g-eval|"
    r"perplexity(-score)?|latency|cost|is-valid-openai-\w+|select-best|human|meteor|gleu|"
    r"fn|eval|grade)"
    r"(\([^)]*\))?:\s?",
)


def read(text, errors):  # noqa: C901
    records = csv_records(text, errors)
    _, header = next(records, (1, None))
    if not header:
        errors.append(RowError(1, "", "the file is empty (a header row is needed)", "row"))
        return []
    header = [name.strip() for name in header]
    twice = header_errors(header)
    if twice:
        errors += twice
        return []
    variables = [name for name in header if not name.startswith("__")]
    if not variables:
        errors.append(RowError(1, "", "no vars column (every column starts with __)", "row"))
        return []
    rows = []
    for n, values in records:
        if not any(value.strip() for value in values):
            continue
        if len(values) != len(header):
            errors.append(RowError(n, "", f"{len(values)} cells for {len(header)} columns", "row"))
            continue
        record = dict(zip(header, values, strict=True))
        input_value = (
            record[variables[0]] if len(variables) == 1 else {v: record[v] for v in variables}
        )
        fields = {"input": input_value}
        expected, assertions = {}, []
        for name in header:
            cell = record[name].strip()
            if not EXPECTED.match(name) or not cell:
                continue
            found = ASSERTION.match(cell)
            if found is None or found.group(2) == "equals" and not found.group(1):
                value = cell if found is None else cell[found.end() :]
                if "output" not in expected:
                    expected["output"] = value
                    continue
            assertions.append(cell)
        if assertions:
            expected["assertions"] = assertions
        if any(EXPECTED.match(name) for name in header):
            fields["expected"] = expected
        if "__metadata:tags" in record:
            fields["tags"] = [t.strip() for t in record["__metadata:tags"].split(",") if t.strip()]
        key = (record.get("__metadata:key") or record.get("__metadata:id") or "").strip()
        rows.append(Row(n, key or derived_key("pf", input_value), fields, "row"))
    return rows
