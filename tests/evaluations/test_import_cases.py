"""ImportCases: an import upserts by key into the dataset's draft (starting one from the latest
frozen version), is atomic with every error named by line and field, writes one audit entry,
changes nothing in a dry run, never writes a frozen version and keeps a constant number of
queries whatever the number of rows."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluations.actions.import_cases import CasesInvalid, ImportCases
from evaluations.cases_io import case_dicts
from evaluations.models import Case, CaseVersion, DatasetVersion
from governance.models import AuditEntry
from tests.support import factories

pytestmark = pytest.mark.django_db

TOOLS = {"label": "Tools", "kind": "tools_used", "params": {}, "threshold": 1.0}


def jsonl(*objects):
    return "".join(json.dumps(o) + "\n" for o in objects)


@pytest.fixture
def dataset():
    dataset = factories.dataset("support")
    factories.dataset_version(
        dataset,
        cases=[("refund", "Refund?", {"tags": ["money"]}), ("hello", "hi", {})],
        checks=[TOOLS],
    )
    return dataset


def run(user, dataset, text, **options):
    return ImportCases(acting_user=user, dataset=dataset, text=text, **options).execute()


def test_an_import_starts_a_draft_from_the_latest_frozen_version_and_upserts_by_key(
    editor, dataset
):
    frozen = dataset.latest_frozen
    result = run(
        editor,
        dataset,
        jsonl(
            {"key": "refund", "input": "Refund $20?"},  # changed
            {"key": "hello", "input": "hi"},  # unchanged
            {"key": "new-one", "input": "New?", "expected_tools": [{"name": "kb.search"}]},
        ),
    )
    assert result.started_draft and result.version.number == 2 and not result.version.is_frozen
    assert result.added == ["new-one"]
    assert result.changed == {"refund": ["input"]}
    assert result.unchanged == ["hello"]
    cases = {c["key"]: c for c in case_dicts(result.version)}
    assert cases["refund"]["input"] == "Refund $20?"
    assert cases["refund"]["tags"] == ["money"]  # a field the line does not give is kept
    assert cases["new-one"]["expected_tools"] == [{"name": "kb.search"}]
    # The frozen version is never written.
    assert {c["key"]: c["input"] for c in case_dicts(frozen)} == {
        "refund": "Refund?",
        "hello": "hi",
    }


def test_an_import_writes_into_the_existing_draft(editor, dataset):
    draft = factories.dataset_version(dataset, cases=[("only", "x", {})], frozen=False)
    result = run(editor, dataset, jsonl({"key": "only", "input": "y"}, {"key": "more"}))
    assert result.version == draft and not result.started_draft
    assert DatasetVersion.objects.filter(dataset=dataset).count() == 2
    assert sorted(c["key"] for c in case_dicts(draft)) == ["more", "only"]


def test_a_key_removed_from_the_draft_comes_back_with_its_case_identity(editor, dataset):
    draft = factories.dataset_version(dataset, cases=[("hello", "hi", {})], frozen=False)
    refund = Case.objects.get(dataset=dataset, key="refund")
    run(editor, dataset, jsonl({"key": "refund", "input": "back"}))
    assert draft.case_versions.get(case__key="refund").case_id == refund.pk


def test_one_bad_line_refuses_the_whole_file_naming_every_line_and_field(editor, dataset):
    text = jsonl(
        {"key": "good", "input": "fine"},
        {"key": "bad-tools", "expected_tools": [{"arguments": {}}]},
        {"key": "Not a slug!", "input": "x"},
        {"key": "good", "input": "again"},
        {"key": "bad-override", "overrides": {"Nope": {"threshold": 0.5}}},
    )
    with pytest.raises(CasesInvalid) as caught:
        run(editor, dataset, text)
    errors = [(e.line, e.field, str(e)) for e in caught.value.errors]
    assert errors[0] == (
        2,
        "expected_tools[0]",
        "line 2: expected_tools[0]: needs a tool name (a string, or an object with a name)",
    )
    assert errors[1][:2] == (3, "key") and errors[1][2].startswith("line 3: key: Enter a valid")
    assert errors[2] == (4, "key", "line 4: key: 'good' is also on line 1")
    assert errors[3] == (
        5,
        "overrides.Nope",
        "line 5: overrides.Nope: no check with this label",
    )
    # Nothing changed: no draft, no case, no audit entry.
    assert DatasetVersion.objects.filter(dataset=dataset).count() == 1
    assert not Case.objects.filter(key="good").exists()
    assert not AuditEntry.objects.filter(action__startswith="evaluations.").exists()


def test_every_error_of_a_line_is_named_at_once_each_with_its_field(editor, dataset):
    """Not only a line's first error: an unknown field, a tool without a name and an override
    of no check on one line are three errors, in one preview (docs/cases.md)."""
    text = jsonl(
        {"key": "fine", "input": "x"},
        {
            "key": "two-bad",
            "input": "x",
            "expected_tools": [{"nme": "kb.search"}],
            "overrides": {"Nope": {"threshold": 2}},
            "colour": 1,
        },
        {"input": "no key", "tags": "money"},
    )
    result = run(editor, dataset, text, dry_run=True)
    assert [(e.line, e.field, e.message) for e in result.errors] == [
        (2, "colour", "unknown field 'colour'"),
        (
            2,
            "expected_tools[0]",
            "expected_tools[0]: needs a tool name (a string, or an object with a name)",
        ),
        (2, "overrides.Nope", "overrides.Nope: no check with this label"),
        (2, "overrides.Nope.threshold", "overrides.Nope.threshold: must be in [0, 1]"),
        (3, "key", "key: needed (the case's stable id)"),
        (3, "tags", "tags: must be a JSON list"),
    ]
    assert result.added == ["fine"]  # the good line is previewed; the bad ones are not
    with pytest.raises(CasesInvalid) as caught:
        run(editor, dataset, text)
    assert len(caught.value.errors) == 6
    assert DatasetVersion.objects.filter(dataset=dataset).count() == 1  # nothing written
    assert not Case.objects.filter(key="fine").exists()


def test_every_bad_cell_of_a_csv_row_and_its_content_errors_are_named_at_once(editor, dataset):
    text = 'key,input,expected,expected_tools,overrides\na,x,{oops,"[{}]","{""T"": 1"\n'
    result = run(editor, dataset, text, fmt="csv", dry_run=True)
    assert [(e.where, e.line, e.field) for e in result.errors] == [
        ("row", 2, "expected"),
        ("row", 2, "overrides"),
        ("row", 2, "expected_tools[0]"),  # the cell that could be read is validated too
    ]
    assert result.added == []


def test_a_null_input_is_an_error_not_a_crash(editor, dataset):
    with pytest.raises(CasesInvalid) as caught:
        run(editor, dataset, jsonl({"key": "a", "input": None}))
    assert [(e.line, e.field) for e in caught.value.errors] == [(1, "input")]


def test_a_reader_error_refuses_the_file_too(editor, dataset):
    with pytest.raises(CasesInvalid) as caught:
        run(editor, dataset, "key,input\na,x\nb\n", fmt="csv")
    assert [str(e) for e in caught.value.errors] == ["row 3: 1 cells for 2 columns"]
    assert not Case.objects.filter(key="a").exists()


def test_an_import_writes_one_audit_entry_with_the_counts_and_keys(editor, dataset):
    result = run(editor, dataset, jsonl({"key": "refund", "input": "new"}, {"key": "added"}))
    entry = AuditEntry.objects.get(action="evaluations.case.import")
    assert entry.actor == editor and entry.target_id == str(result.version.pk)
    assert entry.after["added"] == 1 and entry.after["changed"] == 1
    assert entry.after["unchanged"] == 0  # of the file's rows; "hello" is not in the file
    assert entry.after["keys"] == {"added": ["added"], "changed": ["refund"], "unchanged": []}
    assert entry.after["format"] == "jsonl"
    assert not AuditEntry.objects.filter(action="evaluations.case.create").exists()


def test_a_dry_run_previews_and_writes_nothing(editor, dataset):
    result = run(
        editor,
        dataset,
        jsonl({"key": "refund", "input": "new", "tags": ["money"]}, {"key": "fresh"}, {"oops": 1}),
        dry_run=True,
    )
    assert result.added == ["fresh"] and result.changed == {"refund": ["input"]}
    assert [str(e) for e in result.errors] == [
        "line 3: key: needed (the case's stable id)",
        "line 3: unknown field 'oops'",
    ]
    assert result.version == dataset.latest_frozen  # what a new draft would start from
    assert DatasetVersion.objects.filter(dataset=dataset).count() == 1
    assert not Case.objects.filter(key="fresh").exists()
    assert not AuditEntry.objects.filter(action__startswith="evaluations.").exists()


def test_a_dataset_without_versions_gets_its_first_draft(editor):
    dataset = factories.dataset("empty")
    result = run(editor, dataset, "key,input\na,x\n")
    assert result.version.number == 1 and result.added == ["a"]


def test_an_unknown_format_is_refused_naming_the_format(editor, dataset):
    from sherlock.core.errors import ActionInvalid

    with pytest.raises(ActionInvalid) as caught:
        run(editor, dataset, '{"input": "x"}\n', filename="x.jsonl")
    assert caught.value.field == "format"


def test_a_json_list_of_cases_imports_like_a_file(editor, dataset):
    result = ImportCases(
        acting_user=editor, dataset=dataset, cases=[{"key": "a", "input": "x"}, "nope"]
    )
    with pytest.raises(CasesInvalid) as caught:
        result.execute()
    assert [str(e) for e in caught.value.errors] == ["item 2: must be a JSON object"]


def test_the_query_count_does_not_grow_with_the_rows(editor, dataset):
    factories.dataset_version(dataset, cases=[("refund", "x", {})], frozen=False)

    def queries(n, start):
        rows = [{"key": f"k{start + i}", "input": f"q{i}"} for i in range(n)]
        rows += [{"key": "refund", "input": f"changed {start}"}]
        with CaptureQueriesContext(connection) as captured:
            run(editor, dataset, jsonl(*rows))
        return len(captured)

    queries(1, 0)  # the user's permission cache and the audit's content types, once
    assert queries(3, 10) == queries(60, 100)
    assert CaseVersion.objects.filter(dataset_version__frozen_at__isnull=True).count() == 65
