"""The cases-as-files API: import (a file upload or a JSON list, with a dry run), export
(JSONL or CSV of a version) and the diff of two versions; bad input answers 4xx in the error
shape naming the field (every bad row with its line), never 500."""

import csv
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluations.cases_io import case_dicts
from evaluations.models import Case, DatasetVersion
from tests.support import factories

pytestmark = pytest.mark.django_db

TOOLS = {"label": "Tools", "kind": "tools_used", "params": {}, "threshold": 1.0}
URL = "/api/v1/datasets/support/"


@pytest.fixture
def dataset():
    dataset = factories.dataset("support")
    factories.dataset_version(
        dataset, cases=[("refund", "Refund?", {}), ("hello", "hi", {})], checks=[TOOLS]
    )
    return dataset


def test_an_uploaded_file_is_imported_into_a_new_draft(editor, dataset):
    upload = SimpleUploadedFile("cases.csv", b"key,input,tags\nrefund,Refund $20?,money\nnew,Hi,\n")
    answer = factories.api(editor).post(f"{URL}draft/import/", {"file": upload}, format="multipart")
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert (body["added"], body["changed"], body["unchanged"]) == (1, 1, 0)
    assert body["keys"] == {
        "added": ["new"],
        "changed": {"refund": ["input", "tags"]},
        "unchanged": [],
    }
    assert body["started_draft"] and body["number"] == 2 and body["format"] == "csv"
    draft = DatasetVersion.objects.get(pk=body["dataset_version"])
    assert {c["key"]: c["tags"] for c in case_dicts(draft)}["refund"] == ["money"]


def test_a_json_list_of_cases_is_imported(editor, dataset):
    answer = factories.api(editor).post(
        f"{URL}draft/import/", [{"key": "hello", "input": "hi"}, {"key": "x"}], format="json"
    )
    assert answer.status_code == 200
    assert (answer.json()["added"], answer.json()["unchanged"]) == (1, 1)


def test_a_bad_file_answers_400_with_every_error_and_saves_nothing(editor, dataset):
    upload = SimpleUploadedFile(
        "cases.jsonl",
        b'{"key": "ok"}\n{"key": "bad", "expected_tools": [{"arguments": {}}]}\n'
        b'{"key": "worse", "tags": 3}\n',
    )
    answer = factories.api(editor).post(f"{URL}draft/import/", {"file": upload}, format="multipart")
    assert answer.status_code == 400
    body = answer.json()
    assert body["code"] == "invalid" and body["field"] == "expected_tools[0]"
    assert body["detail"].startswith("2 error(s), nothing imported")
    assert body["errors"] == [
        {
            "line": 2,
            "detail": "line 2: expected_tools[0]: needs a tool name"
            " (a string, or an object with a name)",
            "code": "invalid",
            "field": "expected_tools[0]",
        },
        {
            "line": 3,
            "detail": "line 3: tags: must be a JSON list",
            "code": "invalid",
            "field": "tags",
        },
    ]
    assert not Case.objects.filter(key="ok").exists()
    assert DatasetVersion.objects.filter(dataset=dataset).count() == 1


def test_a_dry_run_answers_the_preview_with_its_errors_and_writes_nothing(editor, dataset):
    answer = factories.api(editor).post(
        f"{URL}draft/import/?dry_run=true",
        [{"key": "refund", "input": "changed"}, {"key": "new"}, {"key": "Bad key"}],
        format="json",
    )
    assert answer.status_code == 200
    body = answer.json()
    assert body["dry_run"] and (body["added"], body["changed"]) == (1, 1)
    assert [e["line"] for e in body["errors"]] == [3]
    assert DatasetVersion.objects.filter(dataset=dataset).count() == 1


@pytest.mark.parametrize(
    "data,kwargs,field",
    [
        ({}, {"format": "json"}, "file"),
        ({"file": "not a file"}, {}, "file"),
        ({"cases": []}, {"format": "json"}, "file"),
        (None, {"data": "{", "content_type": "application/json"}, None),
    ],
)
def test_a_request_without_cases_answers_400(editor, dataset, data, kwargs, field):
    client = factories.api(editor)
    if data is None:
        answer = client.generic("POST", f"{URL}draft/import/", **kwargs)
    else:
        answer = client.post(f"{URL}draft/import/", data, **kwargs)
    assert answer.status_code == 400
    assert "detail" in answer.json()
    if field:
        assert answer.json()["field"] == field


def test_an_unknown_format_answers_400_naming_the_format(editor, dataset):
    upload = SimpleUploadedFile("cases.txt", b'{"input": "x"}\n')
    answer = factories.api(editor).post(f"{URL}draft/import/", {"file": upload}, format="multipart")
    assert answer.status_code == 400 and answer.json()["field"] == "format"


def test_export_gives_a_versions_cases_as_jsonl_or_csv(builder, dataset):
    client = factories.api(builder)  # a reader of the dataset may export it
    answer = client.get(f"{URL}export/?format=jsonl")
    assert answer.status_code == 200
    assert answer["Content-Type"] == "application/x-ndjson; charset=utf-8"
    assert answer["Content-Disposition"] == 'attachment; filename="support-v1.jsonl"'
    keys = [json.loads(line)["key"] for line in answer.content.decode().splitlines()]
    assert keys == ["hello", "refund"]
    answer = client.get(f"{URL}export/?format=csv&version=1")
    assert answer.status_code == 200 and answer["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(answer.content.decode())))
    assert [(r["key"], r["input"]) for r in rows] == [("hello", "hi"), ("refund", "Refund?")]


def test_export_refusals_are_in_the_error_shape(builder, outsider, dataset):
    client = factories.api(builder)
    assert client.get(f"{URL}export/?format=xml").json()["field"] == "format"
    assert client.get(f"{URL}export/?version=x").json()["field"] == "version"
    missing = client.get(f"{URL}export/?version=7")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    hidden = factories.api(outsider).get(f"{URL}export/")
    assert hidden.status_code == 404 and hidden.json()["code"] == "not_found"


def test_the_diff_names_cases_and_checks_added_removed_and_changed(editor, dataset):
    factories.dataset_version(
        dataset,
        cases=[("refund", "Refund $20?", {"tags": ["money"]}), ("new", "x", {})],
        checks=[
            dict(TOOLS, threshold=0.5),
            {"label": "Fast", "kind": "latency", "params": {"max_ms": 500}},
        ],
    )
    answer = factories.api(editor).get(f"{URL}diff/?a=1&b=2")
    assert answer.status_code == 200
    body = answer.json()
    assert (body["a"], body["b"]) == (1, 2)
    assert body["cases"]["added"] == ["new"] and body["cases"]["removed"] == ["hello"]
    assert body["cases"]["changed"] == [
        {
            "key": "refund",
            "fields": {
                "input": {"a": "Refund?", "b": "Refund $20?"},
                "tags": {"a": [], "b": ["money"]},
            },
        }
    ]
    assert body["checks"]["added"] == ["Fast"] and body["checks"]["removed"] == []
    assert body["checks"]["changed"] == [
        {"label": "Tools", "fields": {"threshold": {"a": 1.0, "b": 0.5}}}
    ]


def test_the_diff_needs_two_existing_versions(editor, dataset):
    client = factories.api(editor)
    assert client.get(f"{URL}diff/?a=1").json()["field"] == "b"
    assert client.get(f"{URL}diff/?a=1&b=two").json()["field"] == "b"
    missing = client.get(f"{URL}diff/?a=1&b=5")
    assert missing.status_code == 404 and missing.json()["field"] == "b"


def test_the_diff_keeps_a_constant_number_of_queries(
    editor, dataset, django_assert_max_num_queries
):
    many = [(f"k{i}", f"q{i}", {}) for i in range(40)]
    factories.dataset_version(dataset, cases=many, checks=[TOOLS])
    client = factories.api(editor)
    client.get(f"{URL}diff/?a=1&b=2")  # the permission cache, once
    with django_assert_max_num_queries(12):
        assert client.get(f"{URL}diff/?a=1&b=2").status_code == 200


def test_an_imported_verifier_naming_sherlocks_secret_is_refused_and_audited(editor, dataset):
    """As `POST /cases/` audits it (`evaluations.case.refused`), naming the row."""
    from governance.models import AuditEntry

    verifier = {
        "kind": "http",
        "url": "https://crm.example.com/x",
        "headers_env": {"X-Key": "SHERLOCK_AUDIT_KEY"},
        "predicate": {"path": "$.ok", "op": "truthy"},
    }
    cases = [
        {"key": "ok", "input": "hi"},
        {"key": "leak", "input": "hi", "outcome_check": verifier},
    ]

    answer = factories.api(editor).post(f"{URL}draft/import/", cases, format="json")

    assert answer.status_code == 400, answer.json()
    assert "SHERLOCK_AUDIT_KEY is Sherlock's own secret" in json.dumps(answer.json())
    assert not DatasetVersion.objects.filter(dataset=dataset, frozen_at=None).exists()
    entry = AuditEntry.objects.get(action="evaluations.case.refused")
    assert entry.actor == editor
    assert entry.after == {"verb": "import", "code": "egress_refused"}
    assert entry.reason.startswith("item 2: outcome_check.headers_env.X-Key: SHERLOCK_AUDIT_KEY")
