"""Writing audit entries out as CSV or JSON Lines, for `export_audit` and the admin action.

Every field is exported, hashes included, so an exported file can be checked against the chain
by anyone holding it.
"""

import csv
import json

from django.core.serializers.json import DjangoJSONEncoder

# Every stored field, in this order; the API's audit serializer lists the same ones.
FIELDS = [
    "sequence",
    "at",
    "actor_id",
    "actor_repr",
    "action",
    "target_type",
    "target_id",
    "target_repr",
    "before",
    "after",
    "reason",
    "request_id",
    "ip",
    "prev_hash",
    "hash",
]


def _row(entry):
    return {name: getattr(entry, name) for name in FIELDS}


def _jsonl(entries, out):
    count = 0
    for entry in entries.iterator(chunk_size=2000):
        out.write(json.dumps(_row(entry), cls=DjangoJSONEncoder, ensure_ascii=False) + "\n")
        count += 1
    return count


def _csv(entries, out):
    writer = csv.DictWriter(out, fieldnames=FIELDS)
    writer.writeheader()
    count = 0
    for entry in entries.iterator(chunk_size=2000):
        row = _row(entry)
        for name in ("before", "after"):
            row[name] = "" if row[name] is None else json.dumps(row[name], cls=DjangoJSONEncoder)
        row["at"] = entry.at.isoformat()
        writer.writerow(row)
        count += 1
    return count


FORMATS = {"csv": _csv, "jsonl": _jsonl}


def write_entries(entries, fmt, out):
    """Write `entries` (a queryset) to the text stream `out`; returns how many were written."""
    return FORMATS[fmt](entries, out)
