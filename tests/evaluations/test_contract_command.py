"""`manage.py contract FILE [--json]` on the contract's worked example, and on bad input."""

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "seed_table_trials.json"
PROJECT = Path(__file__).resolve().parents[2]

# The contract table, printed exactly.
SEED_TABLE = """\
| variant | quality | useful progress | verified tool effects | cost/run | cost/verified outcome | false success | unverified completion | gate |
|---|---|---|---|---|---|---|---|---|
| stable v1 | 0.818 (4/4) | 14/14 | 5/5 | $0.41 | $0.52 | 0/4 | 0 | pass |
| fast v2 | 0.902 (5/5) | 15/16 | 4/5 | $0.38 | $0.63 | 1/5 | 1 | fail (false success) |
"""  # noqa: E501

SEED_JSON = [
    {
        "variant": "stable v1",
        "runs": 5,
        "declared_complete": 4,
        "quality": {"mean": 0.818, "graded": 4, "declared": 4},
        "useful_progress": {"num": 14, "den": 14, "excluded_wait_windows": 4},
        "tool_effects": {
            "verified": 5,
            "failed": 0,
            "unknown": 0,
            "den": 5,
            "intentionally_denied": 1,
        },
        "cost_per_run_usd": 0.41,
        "cost_per_verified_outcome_usd": 0.52,
        "billing_coverage": {"billed": 5, "runs": 5},
        "false_success": {"num": 0, "den": 4, "wilson95": None},
        "unverified_completion": 0,
        "gates": {
            "coverage": "pass",
            "false_success": "pass",
            "unknown_effects": "pass",
            "floors": "pass",
            "budget": "pass",
        },
        "first_failing_gate": None,
        "release": "pass",
    },
    {
        "variant": "fast v2",
        "runs": 5,
        "declared_complete": 5,
        "quality": {"mean": 0.902, "graded": 5, "declared": 5},
        "useful_progress": {"num": 15, "den": 16, "excluded_wait_windows": 0},
        "tool_effects": {
            "verified": 4,
            "failed": 0,
            "unknown": 1,
            "den": 5,
            "intentionally_denied": 1,
        },
        "cost_per_run_usd": 0.38,
        "cost_per_verified_outcome_usd": 0.63,
        "billing_coverage": {"billed": 5, "runs": 5},
        "false_success": {"num": 1, "den": 5, "wilson95": None},
        "unverified_completion": 1,
        "gates": {
            "coverage": "pass",
            "false_success": "fail",
            "unknown_effects": "fail",
            "floors": "fail",
            "budget": "fail",
        },
        "first_failing_gate": "false_success",
        "release": "fail",
    },
]


def run_contract(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command("contract", *[str(arg) for arg in args], stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def table_rows(output):
    """The table as {variant: {column: cell}}."""
    header, _rule, *rows = output.strip().splitlines()

    def split(line):
        return [cell.strip() for cell in line.strip("|").split("|")]

    columns = split(header)
    parsed = {}
    for row in rows:
        cells = dict(zip(columns, split(row), strict=True))
        parsed[cells["variant"]] = cells
    return parsed


def test_it_prints_exactly_the_table_of_design_section_6():
    out, err = run_contract(FIXTURE)

    assert out == SEED_TABLE
    assert err == ""


def test_every_cell_of_the_seed_table():
    rows = table_rows(run_contract(FIXTURE)[0])

    assert list(rows) == ["stable v1", "fast v2"]
    assert rows["stable v1"] == {
        "variant": "stable v1",
        "quality": "0.818 (4/4)",
        "useful progress": "14/14",
        "verified tool effects": "5/5",
        "cost/run": "$0.41",
        "cost/verified outcome": "$0.52",
        "false success": "0/4",
        "unverified completion": "0",
        "gate": "pass",
    }
    assert rows["fast v2"] == {
        "variant": "fast v2",
        "quality": "0.902 (5/5)",
        "useful progress": "15/16",
        "verified tool effects": "4/5",
        "cost/run": "$0.38",
        "cost/verified outcome": "$0.63",
        "false success": "1/5",
        "unverified completion": "1",
        "gate": "fail (false success)",
    }


def test_json_output_has_exactly_the_documented_keys_and_values():
    out, _ = run_contract(FIXTURE, "--json")
    data = json.loads(out)

    assert data == SEED_JSON
    # Key order is part of the contract of the output, not only the values.
    assert [list(item) for item in data] == [list(item) for item in SEED_JSON]


def test_json_lines_input_uses_the_default_thresholds_and_says_so(tmp_path):
    trials = json.loads(FIXTURE.read_text())["trials"]
    path = tmp_path / "trials.jsonl"
    path.write_text("".join(json.dumps(trial) + "\n" for trial in trials))

    out, err = run_contract(path)

    assert out == SEED_TABLE
    assert "no thresholds" in err


def test_json_output_lists_variants_in_order_of_first_appearance(tmp_path):
    trials = json.loads(FIXTURE.read_text())["trials"]
    interleaved = [trials[5], trials[0], *trials[1:5], *trials[6:]]
    path = tmp_path / "trials.jsonl"
    path.write_text("\n".join(json.dumps(trial) for trial in interleaved))

    data = json.loads(run_contract(path, "--json")[0])

    assert [item["variant"] for item in data] == ["fast v2", "stable v1"]
    assert data[1] == SEED_JSON[0]


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "cannot read"),
        ("", "the file is empty"),
        ('{"trials": [\n  {"trial_id": "a",\n  }\n]}', "malformed JSON at line 3, column 3"),
        ('{"trial_id": "a", "variant": "v"}\n{oops}\n', "malformed JSON at line 2"),
        ('{"thresholds": {}, "trials": {}}', "'trials' must be an array"),
        ('{"thresholds": {"max_false_successes": "0"}, "trials": []}', "must be a number"),
    ],
)
def test_bad_input_is_a_clear_error_with_exit_status_2(tmp_path, content, message):
    path = tmp_path / "trials.json"
    if content is not None:
        path.write_text(content)

    with pytest.raises(CommandError, match=message) as error:
        run_contract(path)

    assert error.value.returncode == 2


def test_a_trial_missing_a_required_field_names_the_trial_and_the_field(tmp_path):
    document = json.loads(FIXTURE.read_text())
    del document["trials"][3]["cost"]
    path = tmp_path / "trials.json"
    path.write_text(json.dumps(document))

    with pytest.raises(CommandError) as error:
        run_contract(path)

    assert str(error.value) == (f"{path}: trials[3] (trial 's1-04'): missing required field 'cost'")
    assert error.value.returncode == 2


def test_the_command_line_exits_2_without_a_traceback(tmp_path):
    path = tmp_path / "trials.jsonl"
    path.write_text('{"trial_id": "x1", "variant": "v"}\n')

    completed = subprocess.run(
        [sys.executable, "manage.py", "contract", str(path)],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert completed.returncode == 2
    assert "Traceback" not in completed.stderr
    assert "line 1 (trial 'x1'): missing required field 'declared_complete'" in completed.stderr
    assert completed.stdout == ""
