"""Writing audit entries out as CSV or JSON Lines, for `ExportAudit` (the admin's export, the
audit page's and `manage.py export_audit`), and the one answer a download of them is.

Every field is exported, hashes included, so an exported file can be checked against the chain
by anyone holding it. The CSV's cells are neutralised as every CSV Sherlock writes
(`sherlock.core.csv_cells`): a reason or a target's text starting with `=` is written `'=`,
so that a spreadsheet shows it instead of running it; `restore_cell` undoes it exactly, which
is what to apply to each cell before re-computing an entry's hash from a CSV file (the JSON
Lines export is never changed: it is the one to verify from, docs/governance.md).
"""

import json

from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpResponse
from django.utils import timezone

from governance.models import AuditEntry
from sherlock.core.csv_cells import SafeDictWriter

# Every stored field of an entry but its row id, in the model's order (`actor_id`, not the
# user: the actor may be gone): read from the model, so a new column is exported without a
# second edit. The API's audit serializer derives its fields from this list.
FIELDS = [field.attname for field in AuditEntry._meta.concrete_fields if not field.primary_key]


def _row(entry):
    return {name: getattr(entry, name) for name in FIELDS}


def _jsonl(entries, out):
    count = 0
    for entry in entries.iterator(chunk_size=2000):
        out.write(json.dumps(_row(entry), cls=DjangoJSONEncoder, ensure_ascii=False) + "\n")
        count += 1
    return count


def _csv(entries, out):
    writer = SafeDictWriter(out, fieldnames=FIELDS)
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


CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/jsonl; charset=utf-8"}


def export_response(text, fmt):
    """A download of an export, named for when it was made (`audit-20261206-2015.jsonl`)."""
    response = HttpResponse(text, content_type=CONTENT_TYPES[fmt])
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="audit-{stamp}.{fmt}"'
    return response
