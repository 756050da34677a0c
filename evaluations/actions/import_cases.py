"""ImportCases: an Editor upserts a file of cases, by key, into the dataset's draft version.

One verb for the command (`import_cases`), the API (`POST /api/v1/datasets/{slug}/draft/
import/`) and the admin's import page. The rules are those of `CreateCase` and `UpdateCase`
(`case_fields`): the Editor role on the dataset, a draft version, and every row's key and
content validated by `key_errors` and `content_errors` against the draft's checks. When
the dataset has no draft, one is started from its latest frozen version
(`CreateDraftDatasetVersion`); frozen versions are never written.

An import is atomic: every row is read and validated before anything is written, and one bad
row refuses the whole file with every error, each naming its line (or CSV row) and field
(`CasesInvalid.errors`): every error of every row, not only a row's first (`key_errors`,
`content_errors`, and the reader's own, `Row.faulty`). It writes with a constant number of
statements per batch of rows (`bulk_create`, `bulk_update`: 10,000 cases in a few seconds on
SQLite, `bench/import_cases.py`) and one audit entry, `evaluations.case.import`, with the
counts and a bounded sample of the keys (`audit_keys`: an entry listing 100,000 keys would be
megabytes, in the audit log for ever and on every page of it). A file without a case (empty,
or a header only) is refused before anything is written: no draft is started, no entry
written. A file that cannot be read at all (`cases_io.FileInvalid`: not UTF-8, a NUL) is
refused with its line, in a dry run too. A dry run answers the same preview (added, changed
with the fields that change, unchanged, errors) and writes nothing.
"""

import hashlib
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from evaluations.actions.case_fields import CASE_FIELDS, content_errors, key_errors
from evaluations.actions.create_draft_dataset_version import CreateDraftDatasetVersion
from evaluations.cases_io import (
    ErrorList,
    FileInvalid,
    RowError,
    TooManyErrors,
    UnknownFormat,
    read_cases,
)
from evaluations.cases_io.sherlock_jsonl import read_case_list
from evaluations.models import Case, CaseVersion, Dataset, DatasetVersion
from sherlock.core.actions import Action
from sherlock.core.errors import ActionDenied, ActionInvalid, ActionRefused
from sherlock.core.permissions import user_can

BATCH = 500
AUDIT_KEYS_SAMPLE = 20  # keys of each kind an import's audit entry lists


def audit_keys(keys):
    """What an import's audit entry keeps of a list of keys: the first AUDIT_KEYS_SAMPLE in
    sorted order and the SHA-256 (hex) of all of them sorted, one per line in UTF-8, so the
    entry stays small and still pins exactly which keys there were (docs/cases.md, "What an
    import does")."""
    ordered = sorted(keys)
    return ordered[:AUDIT_KEYS_SAMPLE], hashlib.sha256("\n".join(ordered).encode()).hexdigest()


class CasesInvalid(ActionInvalid):
    """The file has bad rows: `errors` lists every one (RowError), and nothing was written.
    `refusal`: the first row's refusal by an operator's rule (an outcome verifier naming a
    secret or a host not allowed, ActionRefused), which the action audits."""

    def __init__(self, errors, *, refusal=None):
        self.errors = errors
        self.refusal = refusal
        first = errors[0]
        super().__init__(
            f"{len(errors)} error(s), nothing imported; first: {first}", field=first.field
        )


@dataclass
class ImportResult:
    """What an import did, or (dry run) would do. `version` is the draft written, or in a dry
    run without a draft, the frozen version a new draft would start from (None: no version)."""

    version: DatasetVersion | None
    format: str
    dry_run: bool
    added: list = field(default_factory=list)
    changed: dict = field(default_factory=dict)  # key -> the fields that change
    unchanged: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    started_draft: bool = False
    copied_from: DatasetVersion | None = None  # the frozen version a started draft copies

    def started_words(self):
        """What a message says of the draft an import started, "" when it started none: the
        version it copied, by name ("a new draft, started from v3"), never a guess."""
        if not self.started_draft:
            return ""
        if self.copied_from is None:
            return " (a new, empty draft: the dataset had no frozen version)"
        return f" (a new draft, started from {self.copied_from})"

    def counts(self):
        return {
            "added": len(self.added),
            "changed": len(self.changed),
            "unchanged": len(self.unchanged),
            "errors": len(self.errors),
        }


class ImportCases(Action):
    """Upsert cases by key into `dataset`'s draft: `text` (a file's bytes or text, in `fmt`,
    or detected from it and `filename`) or `cases` (a JSON list of Sherlock case objects: the
    API's body as bytes, or a list; read by `sherlock_jsonl.read_case_list`, the same reader).
    Returns an `ImportResult`; raises `CasesInvalid` (every bad row) or, in a dry run, returns
    the errors in the result instead."""

    noun = "case"
    verb = "import"

    def __init__(
        self,
        *,
        acting_user,
        dataset,
        text=None,
        cases=None,
        fmt=None,
        filename=None,
        dry_run=False,
    ):
        super().__init__(acting_user=acting_user)
        if (text is None) == (cases is None):
            raise TypeError("give text or cases")
        self.dataset = dataset
        self.text = text
        self.cases = cases
        self.fmt = fmt
        self.filename = filename
        self.dry_run = dry_run

    def check(self):
        if not user_can(self.acting_user, "edit", self.dataset):
            raise ActionDenied("You may not edit cases of this dataset (Editor role needed).")

    def read(self):
        if self.cases is not None:
            try:
                rows, errors = read_case_list(self.cases)
            except FileInvalid as exc:
                raise CasesInvalid(exc.errors) from None
            return "jsonl", rows, errors
        try:
            return read_cases(self.text, self.fmt, self.filename)
        except UnknownFormat as exc:
            raise ActionInvalid(str(exc), field="format") from None
        except FileInvalid as exc:
            raise CasesInvalid(exc.errors) from None

    def execute_in_transaction(self):
        with transaction.atomic():
            self.check()
            result = self.perform()
            if self.dry_run:
                transaction.set_rollback(True)  # belt and braces: a dry run keeps nothing
            return result

    def perform(self):
        fmt, rows, errors = self.read()
        if not rows and not errors:
            raise ActionInvalid(
                "file: no cases in it (an empty file, or a header only); nothing imported",
                code="empty",
                field="file",
            )
        # Lock the dataset, then its draft: a concurrent import, draft start or freeze waits,
        # and this import reads the committed draft, never one frozen meanwhile.
        Dataset.objects.select_for_update().filter(pk=self.dataset.pk).first()
        draft = (
            DatasetVersion.objects.select_for_update()
            .filter(dataset=self.dataset, frozen_at__isnull=True)
            .first()
        )
        base = draft if draft is not None else self.dataset.latest_frozen
        checks = list(base.checks.all()) if base is not None else []
        current = (
            {cv.case.key: cv for cv in base.case_versions.select_related("case")}
            if base is not None
            else {}
        )
        result = ImportResult(version=base, format=fmt, dry_run=self.dry_run)
        errors = errors if isinstance(errors, ErrorList) else ErrorList(errors)
        try:
            valid, refusal = self.validate(rows, errors, checks)
        except TooManyErrors:
            raise CasesInvalid(errors.listed(stopped=True), refusal=self.refusal) from None
        result.errors = errors.listed()
        errors = result.errors
        for row in valid:
            existing = current.get(row.key)
            if existing is None:
                result.added.append(row.key)
                continue
            changes = [name for name in CASE_FIELDS if name in row.fields]
            changes = [name for name in changes if row.fields[name] != getattr(existing, name)]
            if changes:
                result.changed[row.key] = changes
            else:
                result.unchanged.append(row.key)
        if self.dry_run:
            return result
        if errors:
            raise CasesInvalid(errors, refusal=refusal)
        if draft is None:
            draft = CreateDraftDatasetVersion(
                acting_user=self.acting_user, dataset=self.dataset, note="started by an import"
            ).execute()
            result.started_draft = True
            result.copied_from = draft.copied_from
            # The new draft holds copies of the frozen version's cases: update those rows.
            current = {cv.case.key: cv for cv in draft.case_versions.select_related("case")}
        result.version = draft
        self.write(draft, valid, result, current)
        kinds = {
            "added": result.added,
            "changed": list(result.changed),
            "unchanged": result.unchanged,
        }
        sampled = {kind: audit_keys(keys) for kind, keys in kinds.items()}
        self.audit(
            target=draft,
            after={
                "format": fmt,
                **{k: v for k, v in result.counts().items() if k != "errors"},
                "keys": {kind: sample for kind, (sample, _) in sampled.items()},
                "keys_sha256": {kind: digest for kind, (_, digest) in sampled.items()},
                "started_draft": result.started_draft,
            },
        )
        return result

    def validate(self, rows, errors, checks):
        """The rows that are good, and the first refusal by an operator's rule (ActionRefused,
        audited), or None; every error of every row added to `errors` (an ErrorList, which
        raises TooManyErrors past its bound, the refusal kept in `self.refusal`)."""
        seen: dict[Any, Any] = {}
        valid = []
        self.refusal = None
        for row in rows:
            # Every error of the row, not only the first: its key's, then its content's.
            problems = key_errors(row.key)
            if not problems and row.key in seen:
                problems.append(
                    ActionInvalid(
                        f"key: {row.key!r} is also on {row.where} {seen[row.key]}", field="key"
                    )
                )
            elif not problems:
                seen[row.key] = row.line
            problems += content_errors(row.fields, checks)
            for e in problems:
                if self.refusal is None and isinstance(e, ActionRefused):
                    self.refusal = ActionRefused(f"{row.where} {row.line}: {e}", field=e.field)
            errors += [RowError(row.line, e.field or "", str(e), row.where) for e in problems]
            if not (problems or row.faulty):
                valid.append(row)
        return valid, self.refusal

    def write(self, draft, rows, result, current):
        by_key = {row.key: row for row in rows}
        if result.added:
            known = dict(Case.objects.filter(dataset=self.dataset).values_list("key", "pk"))
            Case.objects.bulk_create(
                [Case(dataset=self.dataset, key=key) for key in result.added if key not in known],
                batch_size=BATCH,
            )
            # Re-read rather than trust bulk_create's pks: not every backend returns them.
            known = dict(Case.objects.filter(dataset=self.dataset).values_list("key", "pk"))
            CaseVersion.objects.bulk_create(
                [
                    CaseVersion(dataset_version=draft, case_id=known[key], **by_key[key].fields)
                    for key in result.added
                ],
                batch_size=BATCH,
            )
        if result.changed:
            updated, names = [], set()
            for key, changes in result.changed.items():
                case_version = current[key]
                for name in changes:
                    setattr(case_version, name, by_key[key].fields[name])
                names.update(changes)
                updated.append(case_version)
            CaseVersion.objects.bulk_update(updated, sorted(names), batch_size=BATCH)
