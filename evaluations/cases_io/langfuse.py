"""Langfuse dataset items: a JSON array, `{"data": [...]}` (the API's list answer) or JSONL.

    [{"id": "refund-1", "input": {"question": "Refund $20?"},
      "expectedOutput": "Approved automatically.", "metadata": {"tags": ["refunds"]}}]

- the key: the item's `id`, else `lf-` and a hash of the input (`derived_key`);
- `input` as it is (text or any JSON);
- `expectedOutput`: text becomes `expected.output`; an object is taken as Sherlock's
  `expected` itself (`output`, `table`, `chart`, `trajectory`);
- `metadata`: its `tags`, `contexts` and `expected_tools` become those fields; other metadata
  is not read.

Langfuse's own bookkeeping (`status`, `datasetId`, `datasetName`, `sourceTraceId`,
`sourceObservationId`, `createdAt`, `updatedAt`, `projectId`) is not read; any other field is
refused, naming it.
"""

from evaluations.cases_io import Row, RowError, derived_key, json_items
from sherlock.core.limits import excerpt

BOOKKEEPING = {
    "status",
    "datasetId",
    "datasetName",
    "sourceTraceId",
    "sourceObservationId",
    "createdAt",
    "updatedAt",
    "projectId",
}
KNOWN = {"id", "input", "expectedOutput", "metadata", *BOOKKEEPING}
FROM_METADATA = ("tags", "contexts", "expected_tools")


def read(text, errors):
    where, items = json_items(text, errors)
    rows = []
    for n, obj in items:
        # Every error of the item: its unknown fields, then each field that cannot be read.
        problems = [
            RowError(n, str(name)[:100], f"unknown field {excerpt(name)}", where)
            for name in sorted(set(obj) - KNOWN)
        ]
        if "input" not in obj:
            problems.append(RowError(n, "input", "input: needed", where))
        fields = {"input": obj["input"]} if "input" in obj else {}
        expected = obj.get("expectedOutput")
        if isinstance(expected, str):
            fields["expected"] = {"output": expected}
        elif isinstance(expected, dict):
            fields["expected"] = expected
        elif expected is not None:
            message = "expectedOutput: must be text or an object"
            problems.append(RowError(n, "expectedOutput", message, where))
        metadata = obj.get("metadata") or {}
        if not isinstance(metadata, dict):
            problems.append(RowError(n, "metadata", "metadata: must be an object", where))
            metadata = {}
        fields.update({name: metadata[name] for name in FROM_METADATA if name in metadata})
        errors += problems
        if "input" not in obj:
            continue  # no input: no case
        key = obj.get("id") or derived_key("lf", obj["input"])
        rows.append(Row(n, key, fields, where, faulty=bool(problems)))
    return rows
