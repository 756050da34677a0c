"""Trial records in and out (the same contract for Sherlock's runs and for trials
evaluated elsewhere): `import_trials` stores them atomically as an external run, `export_run`
writes a run's own records (and JSONL, CSV, JUnit XML), and `contract` on the export gives the
numbers of `run_contract`."""

import csv
import io
import json
from datetime import date
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agents.models import Tool
from evaluations import engine
from evaluations.actions.start_run import StartRun
from evaluations.choices import CostKind, RunPurpose
from evaluations.contract import compute_contract, load_document
from evaluations.contract.runs import run_contract
from evaluations.models import CheckResult, Dataset, DatasetVersion, Run, Trial
from tests.support import factories
from tests.support.contract_runs import FIXTURE, import_seed_variant, seed_records
from tests.support.junit import outcomes, read_junit

pytestmark = pytest.mark.django_db


def command(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def version():
    return factories.agent_version(factories.agent("ext-bot"))


def comparable(result):
    data = result.as_dict()
    data.pop("variant")
    return data


# --- import ------------------------------------------------------------------------------------


def test_import_trials_stores_a_variant_as_an_external_run_and_prints_its_contract(version):
    out, _ = command("import_trials", "ext-bot", "1", str(FIXTURE), "--variant", "stable v1")

    run = Run.objects.get()
    assert run.purpose == RunPurpose.EXTERNAL
    assert (run.status, run.trials_total, run.trials.count()) == ("completed", 5, 5)
    assert "| 0.818 (4/4) | 14/14 | 5/5 | $0.41 | $0.52 | 0/4 | 0 | pass |" in out
    trial = run.trials.get(transcript__imported__trial_id="s1-05")
    assert trial.wait["owner"] == "billing-approver (role)"
    assert trial.excluded_wait_windows == 4
    assert trial.effects_denied == 1


def test_a_bad_record_is_named_by_its_line_and_nothing_is_saved(version, tmp_path):
    lines = [json.dumps(record) for record in seed_records("fast v2")]
    broken = dict(seed_records("fast v2")[2], outcome={"verdict": "probably"})
    lines[2] = json.dumps(broken)
    path = tmp_path / "trials.jsonl"
    path.write_text("\n".join(lines))
    datasets = Dataset.objects.count()

    with pytest.raises(CommandError, match=r"line 3 \(trial 'f2-03'\): 'outcome.verdict'"):
        command("import_trials", "ext-bot", "1", str(path))

    assert (Run.objects.count(), Trial.objects.count()) == (0, 0)
    assert (Dataset.objects.count(), DatasetVersion.objects.count()) == (datasets, 0)


def test_a_file_with_several_variants_needs_one_chosen(version):
    with pytest.raises(CommandError, match="several variants .*stable v1, fast v2"):
        command("import_trials", "ext-bot", "1", str(FIXTURE))
    assert not Run.objects.exists()


def test_an_unknown_agent_version_is_a_clear_error():
    with pytest.raises(CommandError, match="no version 9 of agent 'nobody'"):
        command("import_trials", "nobody", "9", str(FIXTURE))


def test_importing_the_same_tasks_again_reuses_the_external_dataset_version(version):
    first = import_seed_variant("stable v1", version)
    second = import_seed_variant("fast v2", factories.agent_version(version.agent))

    assert first.dataset_version == second.dataset_version
    assert first.comparability == second.comparability


def test_with_a_dataset_tasks_must_be_its_cases(version):
    dataset = factories.dataset("refund-desk")
    factories.dataset_version(dataset, cases=[("t1", "refund", {})])

    with pytest.raises(
        CommandError, match=r"trials\[0\]: task 't1-refund-under-limit.*' is not a case"
    ):
        command(
            "import_trials",
            "ext-bot",
            "1",
            str(FIXTURE),
            "--variant",
            "stable v1",
            "--dataset",
            "refund-desk",
        )
    assert not Run.objects.exists()


def test_with_a_dataset_the_quality_scores_go_to_its_quality_grader(version, tmp_path):
    dataset = factories.dataset("refund-desk")
    factories.dataset_version(
        dataset,
        cases=[("t1", "refund", {}), ("t2", "address", {})],
        checks=[
            {
                "label": "Rubric",
                "kind": "custom",
                "params": {"criterion": "done well"},
                "threshold": 0.885,
                "quality_grader": True,
            }
        ],
    )
    records = seed_records("fast v2")[:2]
    for record, task in zip(records, ["t1", "t2"], strict=True):
        record["task"] = task
    path = tmp_path / "two.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records))

    command("import_trials", "ext-bot", "1", str(path), "--dataset", "refund-desk")

    run = Run.objects.get()
    assert run.dataset_version.dataset == dataset
    statuses = sorted(run.trials.values_list("check_results__status", "check_results__score"))
    assert statuses == [("failed", 0.88), ("passed", 0.89)]
    assert run_contract(run, None).quality_mean == Decimal("0.885")


# --- export ------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["stable v1", "fast v2"])
def test_contract_on_an_imported_runs_export_gives_the_numbers_of_run_contract(variant, tmp_path):
    run = import_seed_variant(variant)
    path = tmp_path / "export.jsonl"

    command("export_run", str(run.pk), "--format", "trials", "--output", str(path))
    document = load_document(path.read_text())
    (from_export,) = compute_contract(document.trials, None, document.locations)

    assert comparable(from_export) == comparable(run_contract(run, None))
    assert from_export.variant == run_contract(run, None).variant
    (from_fixture,) = compute_contract(seed_records(variant), None)
    assert comparable(from_export) == comparable(from_fixture)


# An agent whose transcript carries the contract's evidence; its outcome is checked for real.
REFUNDS = []


def refunds_agent(case):
    amount = case["input"]["amount"]
    if amount <= 50:
        REFUNDS.append(amount)
    return {
        "output": f"Refunded ${amount}.",
        "declared_complete": True,
        "tool_calls": [
            {"id": f"c{amount}", "name": "payments.refund", "arguments": {"amount": amount}}
        ],
        "windows": [{"evidence_delta": "refund row"}, {"evidence_delta": None}],
        "cost_usd": 0.1 + amount / 1000,
        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
    }


def refund_landed(context):
    amount = (context.get("call") or {}).get("arguments", {}).get("amount") or context["case"][
        "input"
    ]["amount"]
    return amount in REFUNDS


def test_contract_on_an_executed_runs_export_gives_the_numbers_of_run_contract(tmp_path, settings):
    # An operator lists the verifiers Editors may name (agents.verifiers.spec); this one too.
    settings.SHERLOCK_VERIFIER_CALLABLES = [
        *settings.SHERLOCK_VERIFIER_CALLABLES,
        "tests.evaluations.test_import_export.refund_landed",
    ]
    """The engine's own run: evidence collected, checks scored, judge spend in the ledger."""
    REFUNDS.clear()
    verifier = {"kind": "python", "callable": "tests.evaluations.test_import_export.refund_landed"}
    Tool.objects.create(name="payments.refund", effectful=True, verifier=verifier)
    dataset_version = factories.dataset_version(
        cases=[
            (
                "small",
                {"amount": 40},
                {"outcome_check": verifier, "expected": {"output": "Refunded $40."}},
            ),
            (
                "large",
                {"amount": 400},
                {"outcome_check": verifier, "expected": {"output": "Refunded $400."}},
            ),
        ],
        checks=[
            {
                "label": "Quality",
                "kind": "answer_relevance_overlap",
                "params": {},
                "quality_grader": True,
                "mode": "informative",
            }
        ],
    )
    agent_version = factories.agent_version(
        callable_path="tests.evaluations.test_import_export.refunds_agent"
    )
    run = StartRun(
        acting_user=None,
        agent_version=agent_version,
        dataset_version=dataset_version,
        repetitions=2,
    ).execute()
    engine.run_shard(run.pk, list(run.trials.values_list("pk", flat=True)))
    trial = run.trials.order_by("pk").first()
    factories.cost_line(
        kind=CostKind.SCORING, day=date.today(), usd=Decimal("0.0125"), run=run, trial=trial
    )

    result = run_contract(run, None)
    assert (result.declared_complete, result.false_success.num) == (4, 2)
    assert (result.tool_effect_integrity.num, result.tool_effect_integrity.den) == (2, 4)
    assert (result.graded, str(result.useful_progress)) == (4, "4/8")
    assert result.billed_usd == Decimal("0.14") * 2 + Decimal("0.50") * 2 + Decimal("0.0125")

    path = tmp_path / "export.jsonl"
    command("export_run", str(run.pk), "--format", "trials", "--output", str(path))
    document = load_document(path.read_text())
    (from_export,) = compute_contract(document.trials, None, document.locations)
    assert comparable(from_export) == comparable(result)


def test_the_jsonl_csv_and_junit_exports_hold_every_result(tmp_path):
    run = import_seed_variant("stable v1")

    jsonl, _ = command("export_run", str(run.pk), "--format", "jsonl")
    lines = [json.loads(line) for line in jsonl.splitlines()]
    assert len(lines) == 5
    assert lines[0]["checks"]["Task quality (imported)"]["score"] == 0.861

    csv_text, _ = command("export_run", str(run.pk), "--format", "csv")
    rows = csv_text.splitlines()
    assert rows[0] == "run,case,repetition,check,status,score,threshold,blocking,reason"
    assert len(rows) == 1 + 5

    junit, _ = command("export_run", str(run.pk), "--format", "junit")
    suite = read_junit(junit)
    # Five cases (imported: no blocking check, so no verdict each) and the run's verdict,
    # which its contract passes.
    assert (suite.tests, suite.errors, suite.failures) == (6, 5, 0)
    assert outcomes(suite)["verdict"] == "passed"


def test_junit_marks_failed_and_flaky_cases():
    run = import_seed_variant("stable v1")
    first, second = run.case_results.order_by("case__key")[:2]
    run.case_results.update(status="passed", passed=True)
    first.refresh_from_db()
    first.passed, first.flaky, first.repetitions_passed, first.repetitions = False, True, 1, 2
    first.status = "flaky"
    first.checks = {
        "Shape": {"blocking": True, "statuses": {"failed": 1, "passed": 1}, "mean": 0.5}
    }
    first.save()

    junit, _ = command("export_run", str(run.pk), "--format", "junit")

    suite = read_junit(junit)
    assert outcomes(suite)[first.case.key] == "failure"
    assert outcomes(suite)[second.case.key] == "passed"
    ((failure,),) = [case.result for case in suite if case.name == first.case.key]
    assert failure.type == "flaky"
    assert "Shape: failed in 1 of 2 repetition(s)" in failure.text


def test_junit_reads_an_unscored_case_as_an_error_never_a_pass():
    run = import_seed_variant("stable v1")  # imported: no blocking check, no verdict
    junit, _ = command("export_run", str(run.pk), "--format", "junit")
    suite = read_junit(junit)
    assert suite.errors == run.case_results.count()
    error = next(case.result[0] for case in suite if case.name != "verdict")
    assert error.message == "no verdict: every blocking check skipped"
    assert error.type == "every_blocking_check_skipped"


def test_export_of_an_unknown_run_exits_2():
    with pytest.raises(CommandError, match="no run #999") as caught:
        command("export_run", "999")
    assert caught.value.returncode == 2


def test_export_run_csv_neutralises_cells_a_spreadsheet_would_run(tmp_path):
    run = import_seed_variant("stable v1")
    CheckResult.objects.filter(trial__run=run).update(reason='=HYPERLINK("http://x.example")')
    path = tmp_path / "export.csv"

    command("export_run", str(run.pk), "--format", "csv", "--output", str(path))

    rows = list(csv.reader(path.open(encoding="utf-8")))
    assert rows[1][-1] == '\'=HYPERLINK("http://x.example")'
    assert not [c for row in rows for c in row if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
