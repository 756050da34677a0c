"""`import_cases` and `export_cases`: the commands print the counts or every error with its
line (exit 1), refuse usage errors with exit 2, and an export imports back into an empty draft
as the same cases, field for field, in every format Sherlock writes."""

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evaluations.cases_io import case_dicts
from evaluations.models import Case, DatasetVersion
from tests.support import factories

pytestmark = pytest.mark.django_db

TOOLS = {"label": "Tools", "kind": "tools_used", "params": {}, "threshold": 1.0}
RICH = [
    (
        "refund",
        "Refund $20?",
        {
            "expected": {"output": "Approved.", "trajectory": [{"name": "kb.search"}]},
            "contexts": ["Refunds under $50 are automatic.", "Two\nlines"],
            "expected_tools": [{"name": "kb.search", "arguments": {"q": "refund"}}],
            "outcome_check": {"kind": "python", "callable": "agents.demo.outcome_in_ledger"},
            "tags": ["money", "with, comma"],
            "overrides": {"Tools": {"threshold": 0.5, "mode": "informative"}},
        },
    ),
    ("json-input", {"messages": [{"role": "user", "content": "hi"}]}, {"tags": ["chat"]}),
    ("bare", "", {}),
]


def command(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def source():
    return factories.dataset_version(factories.dataset("source"), cases=RICH, checks=[TOOLS])


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_an_export_imports_back_into_an_empty_draft_as_the_same_cases(
    fmt, source, editor, tmp_path
):
    path = tmp_path / f"cases.{fmt}"
    command("export_cases", "source", "--format", fmt, "-o", str(path))
    target = factories.dataset("target")
    factories.dataset_version(target, cases=[], checks=[TOOLS], frozen=False)

    out, _ = command("import_cases", "target", str(path), "--user", "editor")

    assert f"3 added, 0 changed, 0 unchanged ({fmt})" in out
    draft = target.versions.get()
    assert case_dicts(draft) == case_dicts(source)
    # And once more: the same file changes nothing.
    out, _ = command("import_cases", "target", str(path), "--user", "editor")
    assert "0 added, 0 changed, 3 unchanged" in out


def test_export_without_a_version_reads_the_draft_else_the_latest_frozen(source, capsys):
    out, _ = command("export_cases", "source")
    assert [json.loads(line)["key"] for line in out.splitlines()] == [
        "bare",
        "json-input",
        "refund",
    ]
    factories.dataset_version(source.dataset, cases=[("draft-only", "x", {})], frozen=False)
    out, _ = command("export_cases", "source")
    assert [json.loads(line)["key"] for line in out.splitlines()] == ["draft-only"]
    out, _ = command("export_cases", "source", "--version", "1", "--format", "csv")
    assert out.splitlines()[0].startswith("key,input,input_json,expected_output")
    assert len(out.splitlines()) == 4  # the header and 3 cases (a context with a line break: JSON)


def test_export_refuses_an_unknown_dataset_or_version_with_status_2(source):
    with pytest.raises(CommandError, match="no dataset 'nope'") as caught:
        command("export_cases", "nope")
    assert caught.value.returncode == 2
    with pytest.raises(CommandError, match="has no version 9") as caught:
        command("export_cases", "source", "--version", "9")
    assert caught.value.returncode == 2


def test_import_prints_every_error_with_its_line_exits_1_and_saves_nothing(
    source, editor, tmp_path
):
    path = tmp_path / "cases.jsonl"
    path.write_text(
        '{"key": "ok", "input": "x"}\n'
        '{"key": "bad", "expected_tools": [{}]}\n'
        "not json\n"
        '{"key": "worse", "overrides": {"Tools": {"threshold": 2}}}\n'
    )
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError, match="3 error\\(s\\), nothing imported") as caught:
        call_command(
            "import_cases", "source", str(path), "--user", "editor", stdout=out, stderr=err
        )
    assert caught.value.returncode == 1
    lines = err.getvalue().splitlines()
    assert (
        lines[0] == f"{path}: line 2: expected_tools[0]: needs a tool name"
        " (a string, or an object with a name)"
    )
    assert lines[1].startswith(f"{path}: line 3: not JSON")
    assert lines[2] == f"{path}: line 4: overrides.Tools.threshold: must be in [0, 1]"
    assert not Case.objects.filter(key="ok").exists()
    assert DatasetVersion.objects.filter(dataset=source.dataset).count() == 1


def test_a_dry_run_lists_what_would_change_and_writes_nothing(source, editor, tmp_path):
    path = tmp_path / "cases.csv"
    path.write_text("key,input\nrefund,Refund $30?\nnew-case,Hello\nbare,\n")
    out, _ = command("import_cases", "source", str(path), "--user", "editor", "--dry-run")
    assert "dry run, nothing written: source v1: 1 added, 1 changed, 1 unchanged (csv)" in out
    assert "  added    new-case" in out and "  changed  refund: input" in out
    assert DatasetVersion.objects.filter(dataset=source.dataset).count() == 1


def test_import_starts_a_draft_and_says_so(source, editor, tmp_path):
    path = tmp_path / "tests.csv"
    path.write_text("question,__expected\nCapital of France?,Paris\n")
    out, _ = command("import_cases", "source", str(path), "--user", "editor")
    assert "source v2 (draft) (a new draft, started from source v1)" in out
    assert "1 added, 0 changed, 0 unchanged (promptfoo)" in out


def test_the_started_draft_names_the_version_it_copied(source, editor, tmp_path):
    """The message names the version the new draft copies, not "the latest": with v1 and v2
    frozen, v3 starts from v2."""
    from django.utils import timezone

    DatasetVersion.objects.create(dataset=source.dataset, number=2, frozen_at=timezone.now())
    path = tmp_path / "cases.csv"
    path.write_text("key,input\nnew-case,Hello\n")
    out, _ = command("import_cases", "source", str(path), "--user", "editor")
    assert "source v3 (draft) (a new draft, started from source v2)" in out


@pytest.mark.parametrize(
    "args,message",
    [
        (["nope", "FILE", "--user", "editor"], "no dataset 'nope'"),
        (["source", "FILE", "--user", "nobody"], "no user 'nobody'"),
        (["source", "missing.jsonl", "--user", "editor"], "cannot read missing.jsonl"),
        (["source", "UNKNOWN", "--user", "editor"], "cannot tell the format"),
        (["source", "FILE", "--user", "builder"], "Editor role needed"),
    ],
)
def test_import_usage_errors_exit_2(source, editor, builder, tmp_path, args, message):
    good = tmp_path / "cases.jsonl"
    good.write_text('{"key": "a", "input": "x"}\n')
    unknown = tmp_path / "plain.jsonl"
    unknown.write_text('{"input": "x"}\n')
    args = [str(good) if a == "FILE" else str(unknown) if a == "UNKNOWN" else a for a in args]
    with pytest.raises(CommandError, match=message) as caught:
        command("import_cases", *args)
    assert caught.value.returncode == 2


def test_a_wrongly_named_format_is_the_files_error(source, editor, tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text('{"key": "a", "input": "x"}\n')
    err = io.StringIO()
    with pytest.raises(CommandError, match="nothing imported") as caught:
        call_command(
            "import_cases", "source", str(path), "--user", "editor", "--format", "csv", stderr=err
        )
    assert caught.value.returncode == 1
    assert "row 1: a key column is needed" in err.getvalue()
