"""`manage.py score_check`: one check, one transcript, a JSON verdict."""

import json
import subprocess
import sys
import types
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from .judges import ScriptedJudge

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def files(tmp_path):
    def write(name, value):
        path = tmp_path / name
        path.write_text(json.dumps(value), encoding="utf-8")
        return str(path)

    return write


def score(*args):
    out = StringIO()
    call_command("score_check", *args, stdout=out)
    return json.loads(out.getvalue())


def test_score_check_prints_the_verdict_as_json(files):
    result = score(
        "--kind",
        "latency",
        "--params",
        files("p.json", {"max_ms": 1000}),
        "--transcript",
        files("t.json", {"latency_ms": 400}),
    )
    assert result["score"] == 1.0
    assert result["status"] == "scored"  # no threshold: scored, never "passed"
    assert result["reason"] == "400 ms <= 1000 ms"
    assert result["evidence"] == {"latency_ms": 400, "max_ms": 1000}


@pytest.mark.parametrize(("threshold", "status"), [("0.5", "passed"), ("0.9", "failed")])
def test_score_check_applies_a_threshold(files, threshold, status):
    result = score(
        "--kind",
        "latency",
        "--params",
        files("p.json", {"max_ms": 1000, "graded": True}),
        "--transcript",
        files("t.json", {"latency_ms": 1200}),
        "--threshold",
        threshold,
    )
    assert (result["score"], result["status"]) == (0.8, status)


def test_score_check_reports_a_skip_whatever_the_threshold(files):
    result = score(
        "--kind",
        "tools_used",
        "--transcript",
        files("t.json", {"tool_calls": []}),
        "--threshold",
        "0.5",
    )
    assert (result["status"], result["score"]) == ("skipped", None)


def test_score_check_reads_the_case(files):
    case = files("c.json", {"expected_tools": [{"name": "search"}]})
    result = score(
        "--kind",
        "tools_used",
        "--case",
        case,
        "--transcript",
        files("t.json", {"tool_calls": [{"name": "search"}]}),
    )
    assert result["score"] == 1.0


def test_score_check_rejects_bad_params_naming_the_field(files):
    with pytest.raises(CommandError) as error:
        score(
            "--kind",
            "tools_used",
            "--params",
            files("p.json", {"tools": [{"args": {}}]}),
            "--transcript",
            files("t.json", {}),
        )
    assert error.value.returncode == 2
    assert str(error.value) == "invalid params: tools[0].args: is not a known parameter"


def test_score_check_exits_with_status_2_and_the_field_on_stderr(files):
    params = files("p.json", {"max_ms": -1})
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "score_check",
            "--kind",
            "latency",
            "--params",
            params,
            "--transcript",
            files("t.json", {"latency_ms": 3}),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "max_ms" in result.stderr
    assert result.stdout == ""


def test_score_check_rejects_an_unreadable_transcript(tmp_path):
    bad = tmp_path / "t.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(CommandError) as error:
        score("--kind", "latency", "--transcript", str(bad))
    assert error.value.returncode == 2


def test_score_check_asks_the_configured_judge_for_model_kinds(files, monkeypatch):
    judge = ScriptedJudge(
        {"heuristic.safety": [{"statements": [], "reason": "fine", "harmful": False}]}
    )
    fake = types.ModuleType("evaluations.judge")
    fake.get_default_judge = lambda **context: judge
    monkeypatch.setitem(sys.modules, "evaluations.judge", fake)
    result = score("--kind", "safety", "--transcript", files("t.json", {"output": "Hello."}))
    assert (result["status"], result["score"]) == ("scored", 1.0)
    assert result["judge_calls"] == [{"rubric": "heuristic.safety", "cached": False}]


@pytest.mark.parametrize("module", [None, types.SimpleNamespace(get_default_judge=lambda: None)])
def test_score_check_skips_model_kinds_without_a_judge(files, monkeypatch, module):
    # None in sys.modules makes the import fail: the judge package is optional here.
    monkeypatch.setitem(sys.modules, "evaluations.judge", module)
    result = score("--kind", "safety", "--transcript", files("t.json", {"output": "Hello."}))
    assert (result["status"], result["reason"]) == ("skipped", "no judge configured")
