"""Imports and exports: every import path (the `import_cases` command, the API's
upload, the admin's import page) reads a file through the one bounded reader, and refuses,
naming the line and field, what used to be a traceback, a 500 or a silent loss: a NUL, JSON
nested 10,000 deep, a byte that is not UTF-8, a member or column given twice, elements of the
wrong type, an empty file, a file over the size limit. An import's audit entry stays small, and
a CSV export is safe to open in a spreadsheet and still imports back as the same cases."""

import csv
import hashlib
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from evaluations.cases_io import case_dicts
from evaluations.models import Case, DatasetVersion
from governance.models import AuditEntry
from tests.support import factories

pytestmark = pytest.mark.django_db

URL = "/api/v1/datasets/support/draft/import/"
DEEP = "[" * 10_000 + "]" * 10_000


@pytest.fixture
def dataset():
    dataset = factories.dataset("support")
    factories.dataset_version(dataset, cases=[("refund", "Refund?", {})])
    return dataset


def command(path, *args):
    """(exit status, stdout, stderr) of `import_cases support PATH --user editor ARGS`."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(
            "import_cases", "support", str(path), "--user", "editor", *args, stdout=out, stderr=err
        )
    except CommandError as exc:
        return exc.returncode, out.getvalue(), err.getvalue() + str(exc)
    return 0, out.getvalue(), err.getvalue()


def upload(editor, content, name="cases.jsonl", **extra):
    data = {"file": SimpleUploadedFile(name, content), **extra}
    return factories.api(editor).post(URL, data, format="multipart")


def admin_preview(client, dataset, content, name="cases.jsonl"):
    data = {"file": SimpleUploadedFile(name, content), "format": "", "preview": "Preview"}
    return client.post(f"/admin/evaluations/dataset/{dataset.pk}/import/", data)


def nothing_written(dataset):
    return (
        dataset.versions.count() == 1
        and list(Case.objects.filter(dataset=dataset).values_list("key", flat=True)) == ["refund"]
        and not AuditEntry.objects.filter(action="evaluations.case.import").exists()
    )


# --- NUL ----------------------------------------------------------------------------------------

NUL_FILES = {
    "raw NUL in a CSV cell": ("cases.csv", b"key,input\nok,fine\nbad,a\x00b\n", "line 3"),
    "raw NUL in JSONL": (
        "cases.jsonl",
        b'{"key": "ok"}\n{"key": "bad", "input": "\x00"}\n',
        "line 2",
    ),
    "escaped NUL in JSONL": (
        "cases.jsonl",
        b'{"key": "ok"}\n{"key": "bad", "tags": ["a\\u0000"]}\n',
        "line 2",
    ),
    "escaped NUL in a member name": (
        "cases.jsonl",
        b'{"key": "bad", "input": {"a\\u0000": 1}}\n',
        "line 1",
    ),
}


@pytest.mark.parametrize("name, content, line", NUL_FILES.values(), ids=NUL_FILES)
def test_the_api_refuses_a_nul_naming_its_line_and_writes_nothing(
    editor, dataset, name, content, line
):
    answer = upload(editor, content, name)

    assert answer.status_code == 400, answer.content
    assert line in answer.json()["detail"] and "NUL" in answer.json()["detail"]
    assert nothing_written(dataset)


@pytest.mark.parametrize("name, content, line", NUL_FILES.values(), ids=NUL_FILES)
def test_the_command_refuses_a_nul_naming_its_line_and_writes_nothing(
    editor, dataset, tmp_path, name, content, line
):
    path = tmp_path / name
    path.write_bytes(content)

    status, _, err = command(path)

    assert status == 1
    assert f"{line}:" in err and "NUL" in err
    assert nothing_written(dataset)


# --- JSON nested 10,000 deep --------------------------------------------------------------------

DEEP_FILES = {
    "jsonl": ("cases.jsonl", f'{{"key": "ok"}}\n{{"key": "deep", "input": {DEEP}}}\n', "line 2"),
    "openai-evals": (
        "x.jsonl",
        f'{{"input": "ok", "ideal": "y"}}\n{{"input": {DEEP}}}\n',
        "line 2",
    ),
    "langfuse": ("items.json", f'[{{"id": "ok", "input": "x"}},\n{{"input": {DEEP}}}]', "line 2"),
    "langfuse-data": ("items.json", f'{{"data": [{{"input": {DEEP}}}]}}', "line 1"),
    "langfuse-jsonl": (
        "items.jsonl",
        f'{{"id": "ok", "input": "x", "metadata": {DEEP}}}\n',
        "line 1",
    ),
    "csv": ("cases.csv", f'key,input_json\nok,"1"\ndeep,"{DEEP}"\n', "row 3"),
}
FORMATS = {
    "jsonl": "jsonl",
    "openai-evals": "openai-evals",
    "langfuse": "langfuse",
    "langfuse-data": "langfuse",
    "langfuse-jsonl": "langfuse",
    "csv": "csv",
}


@pytest.mark.parametrize("case", DEEP_FILES)
def test_the_command_refuses_json_nested_10000_deep_in_every_format_naming_line_and_field(
    editor, dataset, tmp_path, case
):
    name, text, line = DEEP_FILES[case]
    path = tmp_path / name
    path.write_text(text)

    for args in ((), ("--format", FORMATS[case])):
        status, _, err = command(path, *args)

        assert status == 1, err
        assert f"{line}:" in err and "nested deeper than 32 levels" in err
        assert ("input" if case != "langfuse-jsonl" else "metadata") in err
    assert nothing_written(dataset)


def test_the_api_names_the_line_and_field_of_json_nested_too_deep(editor, dataset):
    answer = upload(editor, DEEP_FILES["jsonl"][1].encode())

    assert answer.status_code == 400
    error = answer.json()["errors"][0]
    assert (error["line"], error["field"]) == (2, "input")
    assert "nested deeper than 32 levels" in error["detail"]
    assert nothing_written(dataset)


def test_the_admin_preview_names_the_line_of_json_nested_too_deep(logged_in, editor, dataset):
    page = admin_preview(logged_in(editor), dataset, DEEP_FILES["langfuse"][1].encode(), "x.json")

    assert page.status_code == 200
    html = page.content.decode()
    assert "line 2" in html and "nested deeper than 32 levels" in html
    assert "Confirm import" not in html
    assert nothing_written(dataset)


# --- Size ---------------------------------------------------------------------------------------


@override_settings(SHERLOCK_API_MAX_BODY_BYTES=2048)
def test_the_command_refuses_a_file_over_the_documented_limit_before_reading_it(
    editor, dataset, tmp_path
):
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(f'{{"key": "c{i}", "input": "x"}}\n' for i in range(200)))

    status, _, err = command(path)

    assert status == 2
    assert "at most 2048 bytes" in err and "SHERLOCK_API_MAX_BODY_BYTES" in err
    assert nothing_written(dataset)


@override_settings(SHERLOCK_API_MAX_BODY_BYTES=2048)
def test_the_admin_refuses_an_upload_over_the_limit_and_keeps_nothing_in_the_session(
    logged_in, editor, dataset
):
    client = logged_in(editor)
    content = "".join(f'{{"key": "c{i}", "input": "x"}}\n' for i in range(200)).encode()

    page = admin_preview(client, dataset, content)

    assert page.status_code == 200
    assert "at most 2048 bytes" in page.content.decode()
    assert "evaluations_cases_import" not in client.session
    assert nothing_written(dataset)


@pytest.mark.parametrize(
    "name, rows, place",
    [
        ("cases.jsonl", lambda n: "".join(f'{{"key": "c{i}"}}\n' for i in range(n)), "line 6"),
        ("cases.csv", lambda n: "key\n" + "".join(f"c{i}\n" for i in range(n)), "row 7"),
        (
            "items.json",
            lambda n: json.dumps([{"id": f"c{i}", "input": "x"} for i in range(n)]),
            "item 6",
        ),
    ],
)
def test_the_command_refuses_more_cases_than_the_documented_limit(
    editor, dataset, tmp_path, monkeypatch, name, rows, place
):
    monkeypatch.setattr("evaluations.cases_io.IMPORT_MAX_CASES", 5)
    path = tmp_path / name
    path.write_text(rows(6))

    status, _, err = command(path)

    assert status == 1 and f"{place}: more than 5 cases in one file" in err
    assert nothing_written(dataset)
    path.write_text(rows(5))
    assert command(path)[0] == 0


def test_a_cell_of_a_megabyte_names_the_case_field_limit_and_its_row(editor, dataset):
    content = b"key,input\nok,x\nbig," + b"x" * 1_000_000 + b"\n"

    answer = upload(editor, content, "cases.csv")

    assert answer.status_code == 400
    error = answer.json()["errors"][0]
    assert (error["line"], error["field"]) == (3, "input")
    assert "at most 262144 bytes" in error["detail"] and "131072" not in error["detail"]


# --- UTF-8 --------------------------------------------------------------------------------------


def test_a_byte_that_is_not_utf8_is_refused_with_its_line(editor, dataset, tmp_path):
    content = b'{"key": "ok"}\n{"key": "a"}\n{"key": "b", "input": "caf\xe9"}\n'
    answer = upload(editor, content)
    assert answer.status_code == 400
    assert answer.json()["errors"][0]["line"] == 3
    assert "line 3: not UTF-8 (byte 0xe9" in answer.json()["detail"]

    path = tmp_path / "cases.jsonl"
    path.write_bytes(content)
    status, _, err = command(path)
    assert status == 1 and "line 3: not UTF-8" in err
    assert nothing_written(dataset)


# --- Members and columns given twice ------------------------------------------------------------


def test_a_json_member_given_twice_is_refused_naming_line_and_member(editor, dataset):
    content = b'{"key": "ok"}\n{"key": "twice", "tags": ["a"], "tags": ["b"]}\n'

    answer = upload(editor, content)

    assert answer.status_code == 400
    error = answer.json()["errors"][0]
    assert (error["line"], error["field"]) == (2, "tags")
    assert "duplicate member 'tags'" in error["detail"]
    assert nothing_written(dataset)


def test_a_member_given_twice_inside_a_langfuse_array_names_its_line(editor, dataset, tmp_path):
    path = tmp_path / "items.json"
    path.write_text('[{"id": "a", "input": "x"},\n {"id": "b",\n  "input": {"q": 1, "q": 2}}]')

    status, _, err = command(path)

    assert status == 1 and "line 3: duplicate member 'q'" in err
    assert nothing_written(dataset)


def test_a_member_given_twice_in_a_pretty_printed_langfuse_answer_names_line_and_field(
    editor, dataset, tmp_path
):
    path = tmp_path / "items.json"
    path.write_text(
        '{"data": [\n  {"id": "a", "input": "x"},\n  {"id": "b", "input": {"q": 1,\n  "q": 2}}\n]}'
    )

    status, _, err = command(path)

    assert status == 1
    assert "line 4: duplicate member 'q'" in err and err.count("line ") == 1
    assert nothing_written(dataset)


@pytest.mark.parametrize(
    "content",
    [b"key,input,input\nok,a,b\n", b"question,question,__expected\na,b,c\n"],
    ids=["sherlock csv", "promptfoo"],
)
def test_a_csv_column_given_twice_is_refused_on_row_1(editor, dataset, content):
    answer = upload(editor, content, "cases.csv")

    assert answer.status_code == 400
    error = answer.json()["errors"][0]
    assert error["line"] == 1 and "is given twice" in error["detail"]
    assert nothing_written(dataset)


# --- Element types ------------------------------------------------------------------------------

WRONG_ELEMENTS = [
    ({"tags": [1, {"a": 2}]}, ["tags[0]", "tags[1]"]),
    ({"contexts": [{"a": 1}]}, ["contexts[0]"]),
    ({"expected": {"output": 123}}, ["expected.output"]),
]


@pytest.mark.parametrize("fields, at_fault", WRONG_ELEMENTS)
def test_an_import_refuses_elements_of_the_wrong_type(editor, dataset, fields, at_fault):
    content = json.dumps({"key": "typed", **fields}).encode() + b"\n"

    answer = upload(editor, content)

    assert answer.status_code == 400
    assert [e["field"] for e in answer.json()["errors"]] == at_fault
    assert nothing_written(dataset)


@pytest.mark.parametrize("fields, at_fault", WRONG_ELEMENTS)
def test_post_cases_refuses_elements_of_the_wrong_type(editor, dataset, fields, at_fault):
    draft = factories.dataset_version(dataset, frozen=False)
    body = {"dataset_version": draft.pk, "key": "typed", "input": "x", **fields}

    answer = factories.api(editor).post("/api/v1/cases/", body, format="json")

    assert answer.status_code == 400, answer.json()
    assert at_fault[0] in json.dumps(answer.json())
    assert not Case.objects.filter(key="typed").exists()


def test_a_csv_tools_cell_that_is_a_json_object_is_refused_not_made_a_tool_name(editor, dataset):
    content = b'key,expected_tools\nok,"{""name"": ""kb.search""}"\n'

    answer = upload(editor, content, "cases.csv")

    assert answer.status_code == 400
    error = answer.json()["errors"][0]
    assert (error["line"], error["field"]) == (2, "expected_tools")
    assert "must be a JSON list" in error["detail"]


# --- Empty files --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, content, fmt",
    [
        ("cases.jsonl", b"", "jsonl"),
        ("cases.jsonl", b"\n\n", "jsonl"),
        ("cases.csv", b"key,input\n", "csv"),
        ("tests.csv", b"question,__expected\n", "promptfoo"),
        ("items.json", b"[]", "langfuse"),
    ],
)
def test_an_empty_or_header_only_file_is_refused_without_a_draft_or_an_audit_entry(
    editor, dataset, tmp_path, name, content, fmt
):
    path = tmp_path / name
    path.write_bytes(content)

    status, _, err = command(path, "--format", fmt)
    assert status == 2 and "no cases" in err

    answer = upload(editor, content, name, format=fmt)
    assert answer.status_code == 400 and answer.json()["code"] == "empty"
    assert nothing_written(dataset)


def test_an_empty_json_list_is_refused_by_the_api(editor, dataset):
    answer = factories.api(editor).post(URL, [], format="json")

    assert answer.status_code == 400 and answer.json()["code"] == "empty"
    assert nothing_written(dataset)


# --- The audit entry ----------------------------------------------------------------------------


def test_an_imports_audit_entry_has_the_counts_twenty_keys_of_each_kind_and_their_sha256(
    editor, dataset
):
    keys = [f"case-{i:03}" for i in range(150)]
    content = "".join(json.dumps({"key": k, "input": k}) + "\n" for k in keys)
    content += json.dumps({"key": "refund", "input": "Refund?"}) + "\n"

    answer = upload(editor, content.encode())

    assert answer.status_code == 200
    entry = AuditEntry.objects.get(action="evaluations.case.import")
    assert (entry.after["added"], entry.after["unchanged"]) == (150, 1)
    assert entry.after["keys"] == {"added": keys[:20], "changed": [], "unchanged": ["refund"]}
    digest = hashlib.sha256("\n".join(keys).encode()).hexdigest()
    assert entry.after["keys_sha256"]["added"] == digest
    assert len(json.dumps(entry.after)) < 2_000


# --- CSV exports safe to open ---------------------------------------------------------------

HOSTILE = [
    '=HYPERLINK("http://evil")',
    "+1+1",
    "-2+3",
    "@SUM(A1)",
    "\tTAB",
    "\rCR",
    "'=already quoted",
    "''+two quotes",
    "'plain quote",
    "",
]


@pytest.fixture
def hostile(dataset):
    cases = [
        (
            f"{'-' if i % 2 else ''}case-{i}",
            value,
            {
                "expected": {"output": value} if value else {},
                "contexts": [value or "x", "second"],
                "tags": [value] if value.strip() and "," not in value else [],
                "expected_tools": [{"name": value}] if value.strip() else [],
            },
        )
        for i, value in enumerate(HOSTILE)
    ]
    return factories.dataset_version(dataset, cases=cases, frozen=True)


def test_a_csv_export_neutralises_every_cell_a_spreadsheet_would_run(editor, hostile):
    answer = factories.api(editor).get("/api/v1/datasets/support/export/?format=csv")

    assert answer.status_code == 200
    records = list(csv.reader(io.StringIO(answer.content.decode())))
    cells = [cell for record in records[1:] for cell in record]
    assert cells and not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert '\'=HYPERLINK("http://evil")' in cells
    assert "'''=already quoted" not in cells and "''=already quoted" in cells
    assert "'plain quote" in cells  # no formula after the quote: written as it is


def test_a_csv_export_of_hostile_values_imports_back_as_the_same_cases(editor, hostile, tmp_path):
    answer = factories.api(editor).get("/api/v1/datasets/support/export/?format=csv")
    target = factories.dataset("target")
    factories.dataset_version(target, cases=[], frozen=False)
    path = tmp_path / "hostile.csv"
    path.write_bytes(answer.content)

    out = io.StringIO()
    call_command("import_cases", "target", str(path), "--user", "editor", stdout=out)

    draft = DatasetVersion.objects.get(dataset=target)
    assert case_dicts(draft) == case_dicts(hostile)


# --- The OpenAPI schema -------------------------------------------------------------------------


def test_the_schema_documents_the_import_upload_as_binary():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    body = schema["paths"]["/api/v1/datasets/{slug}/draft/import/"]["post"]["requestBody"]
    ref = body["content"]["multipart/form-data"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert schema["components"]["schemas"][ref]["properties"]["file"]["format"] == "binary"


def test_the_api_refuses_a_json_list_of_more_cases_than_the_limit(editor, dataset, monkeypatch):
    monkeypatch.setattr("evaluations.cases_io.IMPORT_MAX_CASES", 5)
    body = [{"key": f"c{i}"} for i in range(6)]

    answer = factories.api(editor).post(URL, body, format="json")

    assert answer.status_code == 400
    assert "item 6: more than 5 cases in one file" in answer.json()["detail"]
    assert nothing_written(dataset)


# --- review 1: what the first fixes left open ----------------------------------------


def test_the_csv_delimiter_is_counted_not_sniffed_in_a_long_header(editor, dataset, monkeypatch):
    """60 KB of ` 'a` on the first line: csv.Sniffer's quote regex took 20 s of CPU on it, so
    the reader must never ask it (whatever the machine's speed)."""
    import csv

    def sniff(self, sample, delimiters=None):
        raise AssertionError(f"csv.Sniffer asked about {len(sample)} characters")

    monkeypatch.setattr(csv.Sniffer, "sniff", sniff)
    answer = upload(editor, b" 'a" * 20_000 + b"\n", "cases.csv")
    assert answer.status_code == 400


@pytest.mark.parametrize(
    "header, delimiter",
    [("key,input", ","), ("key;input", ";"), ("key\tinput", "\t"), ('"a,b";c;d', ";"), ("k", ",")],
)
def test_the_csv_delimiter_is_the_one_the_header_holds_most(header, delimiter):
    from evaluations.cases_io import delimiter_of

    assert delimiter_of(header + "\nx,y;z\tw\n") == delimiter


SURROGATE_FILES = {
    "jsonl input": ("cases.jsonl", b'{"key": "s", "input": "\\ud800"}\n', "input"),
    "jsonl tag": ("cases.jsonl", b'{"key": "s", "tags": ["\\udfff"]}\n', "tags"),
    "csv input_json": ("cases.csv", b'key,input_json\ns,"""\\ud800"""\n', "input_json"),
    "openai-evals (derived key)": ("cases.jsonl", b'{"input": "\\ud800", "ideal": "x"}\n', ""),
    "langfuse (derived key)": ("cases.json", b'[{"input": "\\ud800"}]', "input"),
}


@pytest.mark.parametrize("name, content, field", SURROGATE_FILES.values(), ids=SURROGATE_FILES)
def test_a_lone_surrogate_escape_is_refused_with_its_line_not_a_500(
    editor, dataset, name, content, field
):
    client = factories.api(editor)
    client.raise_request_exception = False
    answer = client.post(URL, {"file": SimpleUploadedFile(name, content)}, format="multipart")
    assert answer.status_code == 400, answer.status_code
    (error,) = answer.json()["errors"]
    assert "lone surrogate" in error["detail"] and error["line"] == (2 if "csv" in name else 1)
    if field:
        assert error["field"] == field
    assert nothing_written(dataset)
    for fmt in ("jsonl", "csv"):
        assert client.get("/api/v1/datasets/support/export/", {"format": fmt}).status_code == 200


def test_the_command_refuses_a_lone_surrogate_with_its_line(editor, dataset, tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_bytes(b'{"key": "ok"}\n{"key": "s", "input": "\\ud800"}\n')
    status, _, err = command(path)
    assert status == 1 and "line 2: a lone surrogate" in err and nothing_written(dataset)


HUGE = b"9" * 5000
HUGE_FILES = {
    "jsonl": ("c.jsonl", b'{"key":"a","input":' + HUGE + b"}\n", "line 1", "in input"),
    "langfuse array": ("c.json", b'[{"id":"a","input":' + HUGE + b"}]", "line 1", "in input"),
    "csv input_json": ("c.csv", b"key,input_json\na," + HUGE + b"\n", "row 2", "input_json"),
}


@pytest.mark.parametrize("name, content, line, field", HUGE_FILES.values(), ids=HUGE_FILES)
def test_an_integer_of_5000_digits_is_refused_with_line_and_field(
    editor, dataset, tmp_path, logged_in, name, content, line, field
):
    path = tmp_path / name
    path.write_bytes(content)
    status, _, err = command(path)
    assert status == 1 and f"{line}: " in err and "5000 digits" in err and field in err
    answer = upload(editor, content, name)
    assert answer.status_code == 400 and "5000 digits" in answer.json()["detail"]
    client = logged_in(editor)
    page = admin_preview(client, dataset, content, name)
    assert page.status_code == 200 and "5000 digits" in page.content.decode()
    assert nothing_written(dataset)


def test_a_header_of_200000_empty_names_answers_a_bounded_error_list(editor, dataset):
    answer = upload(editor, b"," * 200_000 + b"\n", "cases.csv")
    assert answer.status_code == 400 and len(answer.content) < 10_000, len(answer.content)
    errors = answer.json()["errors"]
    assert len(errors) == 10 and "and 199991 more column(s) given twice" in errors[-1]["detail"]


def test_a_case_with_100000_wrong_tags_answers_a_bounded_error_list(editor, dataset):
    line = json.dumps({"key": "k", "tags": [1] * 100_000}).encode() + b"\n"
    answer = upload(editor, line)
    assert answer.status_code == 400 and len(answer.content) < 10_000, len(answer.content)
    details = [e["detail"] for e in answer.json()["errors"]]
    assert len(details) == 6 and "tags: and 99995 more that are not strings" in details[-1]


def test_a_file_of_many_bad_lines_stops_reading_at_the_hundredth_error(editor, dataset, tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text("not json\n" * 100_000)
    status, _, err = command(path)
    assert status == 1 and err.count("not JSON") == 100
    assert "line 100: more than 100 errors: the reading stopped here" in err
    answer = upload(editor, path.read_bytes())
    assert answer.status_code == 400 and len(answer.json()["errors"]) == 101
    assert nothing_written(dataset)


def test_a_row_with_many_unknown_fields_lists_ten_and_counts_the_rest(editor, dataset):
    item = {"id": "a", "input": "x", **{f"f{i}": 1 for i in range(50)}}
    answer = upload(editor, json.dumps([item]).encode(), "cases.json")
    details = [e["detail"] for e in answer.json()["errors"]]
    assert len(details) == 11 and details[-1] == "item 1: and 40 more error(s) on this item"


def test_the_admin_error_table_of_a_header_of_empty_names_is_bounded(logged_in, editor, dataset):
    page = admin_preview(logged_in(editor), dataset, b"," * 100_000 + b"\n", "c.csv")
    assert page.status_code == 200 and len(page.content) < 200_000, len(page.content)
    assert "more column(s) given twice" in page.content.decode()


JSON_BODIES = {
    "a member given twice": ('[{"key": "a"}, {"key": "dup", "input": "1", "input": "2"}]', 2),
    "a lone surrogate": ('[{"key": "s", "input": "\\ud800"}]', 1),
    "nested too deep": ('[{"key": "a"}, {"key": "d", "input": ' + DEEP + "}]", 2),
    "a long integer": ('[{"key": "a", "input": ' + "9" * 5000 + "}]", 1),
}


@pytest.mark.parametrize("body, item", JSON_BODIES.values(), ids=JSON_BODIES)
def test_the_apis_json_list_is_read_by_the_cases_reader_naming_the_item(
    editor, dataset, body, item
):
    client = factories.api(editor)
    client.raise_request_exception = False
    answer = client.post(URL, body, content_type="application/json")
    assert answer.status_code == 400, answer.status_code
    (error,) = answer.json()["errors"]
    assert error["line"] == item and error["detail"].startswith(f"item {item}: ")
    dry = client.post(URL + "?dry_run=true", body, content_type="application/json")
    assert dry.status_code in (200, 400) and dry.json()["errors"][0]["line"] == item
    assert nothing_written(dataset)


def test_the_apis_json_list_stops_at_the_case_past_the_limit(editor, dataset, monkeypatch):
    monkeypatch.setattr("evaluations.cases_io.IMPORT_MAX_CASES", 2)
    body = '[{"key": "a"}, {"key": "b"}, {"key": "c"}, {"key": "d", "input": "\\ud800"}]'
    answer = factories.api(editor).post(URL, body, content_type="application/json")
    assert answer.status_code == 400
    assert [e["detail"] for e in answer.json()["errors"]] == [
        "item 3: more than 2 cases in one file: split it"
    ]


@override_settings(SHERLOCK_API_MAX_BODY_BYTES=2048)
def test_the_admin_refuses_a_body_over_the_limit_by_its_length_before_reading_it(
    logged_in, editor, dataset, monkeypatch
):
    def never(*args, **kwargs):
        raise AssertionError("the multipart body was parsed")

    monkeypatch.setattr("django.http.multipartparser.MultiPartParser.parse", never)
    client = logged_in(editor)

    page = admin_preview(client, dataset, b'{"key": "a"}\n' * 20_000)

    assert page.status_code == 413
    html = page.content.decode()
    assert "at most 2048 bytes" in html and 'name="file"' in html  # the form, with the error
    assert nothing_written(dataset)


def test_the_admin_import_page_still_checks_the_csrf_token(editor, dataset, password):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.login(username=editor.username, password=password)
    page = client.post(f"/admin/evaluations/dataset/{dataset.pk}/import/", {"preview": "x"})
    assert page.status_code == 403


def test_the_admin_preview_names_a_lone_surrogate_and_confirm_has_nothing_to_import(
    logged_in, editor, dataset
):
    client = logged_in(editor)
    preview = admin_preview(client, dataset, b'{"key": "s", "input": "\\ud800"}\n')
    assert preview.status_code == 200 and "lone surrogate" in preview.content.decode()
    confirm = client.post(f"/admin/evaluations/dataset/{dataset.pk}/import/", {"confirm": "Import"})
    assert confirm.status_code == 302 and nothing_written(dataset)
