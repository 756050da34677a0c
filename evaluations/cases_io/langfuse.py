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
        unknown = sorted(set(obj) - KNOWN)
        if unknown:
            errors.append(RowError(n, unknown[0], f"unknown field {unknown[0]}", where))
            continue
        if "input" not in obj:
            errors.append(RowError(n, "input", "input: needed", where))
            continue
        fields = {"input": obj["input"]}
        expected = obj.get("expectedOutput")
        if isinstance(expected, str):
            fields["expected"] = {"output": expected}
        elif isinstance(expected, dict):
            fields["expected"] = expected
        elif expected is not None:
            errors.append(
                RowError(n, "expectedOutput", "expectedOutput: must be text or an object", where)
            )
            continue
        metadata = obj.get("metadata") or {}
        if not isinstance(metadata, dict):
            errors.append(RowError(n, "metadata", "metadata: must be an object", where))
            continue
        fields.update({name: metadata[name] for name in FROM_METADATA if name in metadata})
        key = obj.get("id") or derived_key("lf", obj["input"])
        rows.append(Row(n, key, fields, where))
    return rows
