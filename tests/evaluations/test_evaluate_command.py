"""`manage.py evaluate`: starts a run as a Builder, waits for the real engine (django-q2 sync
mode), prints the case table and the five-metric contract, writes JUnit and JSON, and exits 0
(every case and the contract passed), 1 (not) or 2 (an error or a timeout)."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agents.models import Tool
from evaluations.models import Run
from tests.support import factories
from tests.support.junit import outcomes, read_junit

# The destination of the refunds: the verifier reads it back, so outcomes are checked for real.
REFUNDS = []
VERIFIER = {"kind": "python", "callable": "tests.evaluations.test_evaluate_command.refund_landed"}


def refunding_agent(case, **_):
    """Refunds, says so, reports its billed cost and a useful window: the contract can pass."""
    amount = case["input"]["amount"]
    REFUNDS.append(amount)
    return {
        "output": f"Refunded ${amount}.",
        "declared_complete": True,
        "tool_calls": [
            {"id": f"r{amount}", "name": "payments.refund", "arguments": {"amount": amount}}
        ],
        "windows": [{"evidence_delta": "refund row"}],
        "cost_usd": 0.01,
    }


def refund_landed(context):
    call = context.get("call") or {}
    amount = call.get("arguments", {}).get("amount") or context["case"]["input"]["amount"]
    return amount in REFUNDS


def evaluate(*args):
    """Run the command; returns (exit code, stdout or the error's message)."""
    out = StringIO()
    try:
        call_command("evaluate", *args, stdout=out)
    except SystemExit as exit_:
        return exit_.code, out.getvalue()
    except CommandError as error:
        return error.returncode, f"{out.getvalue()}{error}"
    return 0, out.getvalue()


@pytest.fixture
def refunds(settings, db):
    settings.SHERLOCK_VERIFIER_CALLABLES = [
        *settings.SHERLOCK_VERIFIER_CALLABLES,
        VERIFIER["callable"],
    ]
    REFUNDS.clear()
    Tool.objects.create(name="payments.refund", effectful=True, verifier=VERIFIER)
    case = {"expected_tools": [{"name": "payments.refund"}], "outcome_check": VERIFIER}
    return factories.dataset_version(
        cases=[("small", {"amount": 40}, case), ("medium", {"amount": 30}, case)],
        checks=[
            {
                "label": "Tools",
                "kind": "tools_used",
                "params": {"match": "any_order"},
                "threshold": 1.0,
            },
        ],
    )


@pytest.fixture
def agent(db):
    return factories.agent("refunds")


def version(agent, callable_path):
    return factories.agent_version(agent, callable_path=callable_path)


GOOD = "tests.evaluations.test_evaluate_command.refunding_agent"
ECHO = "tests.support.agents_under_test.echo"
SCRIPTED = "tests.support.agents_under_test.scripted"


def test_a_run_whose_cases_and_contract_pass_exits_0_with_its_tables(
    live_db, builder, refunds, agent, tmp_path
):
    version(agent, GOOD)
    summary = tmp_path / "run.json"
    code, out = evaluate(
        "refunds", "--dataset", "support-basics", "--user", "builder", "--json", str(summary)
    )
    assert code == 0, out
    run = Run.objects.get()
    assert run.requested_by == builder and run.status == "completed"
    assert f"run #{run.pk} completed: 2/2 trials" in out  # not a terminal: plain lines
    assert "small   passed 1/1  passed 1.00" in out
    assert "cases passed: 2/2 decided, unscored: 0, flaky: 0" in out
    assert "contract (the default thresholds: no publishing policy applies):" in out
    assert "| variant | quality |" in out and "| pass |" in out
    assert "| cost per trial |" in out and "cost/run" not in out  # a trial's figure, said so
    assert "gate" in out and "budget                   pass  $0.01 per verified outcome" in out
    assert "result: passed" in out
    document = json.loads(summary.read_text())
    assert document["passed"] is True and document["exit_code"] == 0
    assert document["verdict"]["url"] == f"/runs/{run.pk}/"  # never an empty URL
    assert document["contract"]["release"] == "pass"
    assert [c["case"] for c in document["cases"]] == ["medium", "small"]
    assert document["spend"] == {
        "usd": "0.02000000",
        "usd_known": "0.02000000",
        "price_missing_calls": 0,
        "text": "$0.02",
    }


def test_the_contract_is_the_agents_publishing_policys_and_says_so(
    live_db, builder, refunds, agent, tmp_path
):
    """The run would pass the default $0.60 budget at $0.01 a verified outcome; the agent's
    policy allows half a cent, as its publish gate would apply it."""
    from governance.models import PublishingPolicy

    PublishingPolicy.objects.create(
        name="Tight", agent=agent, max_cost_per_verified_outcome_usd="0.005"
    )
    version(agent, GOOD)
    summary = tmp_path / "run.json"
    code, out = evaluate(
        "refunds", "--dataset", "support-basics", "--user", "builder", "--json", str(summary)
    )
    assert code == 1, out
    assert "cases passed: 2/2 decided" in out
    assert "contract (thresholds of policy «Tight» v1):" in out
    assert "result: failed: contract: budget" in out
    thresholds = json.loads(summary.read_text())["contract"]["thresholds"]
    assert thresholds["source"] == "thresholds of policy «Tight» v1"
    assert thresholds["values"]["max_cost_per_verified_outcome_usd"] == "0.0050"


def test_cases_that_pass_with_a_failing_contract_exit_1_naming_the_gate(
    live_db, builder, refunds, agent
):
    # echo calls the expected tool (the case passes) but refunds nothing and reports no cost.
    version(agent, ECHO)
    code, out = evaluate("refunds", "--dataset", "support-basics", "--user", "builder")
    assert code == 1, out
    assert "cases passed: 2/2 decided" in out
    assert "result: failed: contract: coverage" in out
    assert "price missing (2 calls)" in out and "$0.0000 " not in out


def test_failed_cases_exit_1_and_the_junit_file_names_them(
    live_db, builder, refunds, agent, tmp_path
):
    version(agent, SCRIPTED)  # answers "ok" and calls no tool: the Tools check fails
    report = tmp_path / "junit.xml"
    code, out = evaluate(
        "refunds", "--dataset", "support-basics", "--user", "builder", "--junit", str(report)
    )
    assert code == 1, out
    assert "small   failed 0/1  failed 0.00" in out
    suite = read_junit(report.read_text())
    # The two cases and the verdict, each failed: a CI reading the file shows the run red.
    assert outcomes(suite) == {"small": "failure", "medium": "failure", "verdict": "failure"}
    ((failure,),) = [case.result for case in suite if case.name == "small"]
    assert failure.message == "0/1 repetition(s) passed; failed: Tools"
    assert "Tools: failed in 1 of 1 repetition(s)" in failure.text


def test_a_run_that_does_not_finish_in_time_exits_2(builder, refunds, agent):
    # Under the test's transaction the shards are never enqueued: the run stays queued.
    version(agent, GOOD)
    code, out = evaluate(
        "refunds", "--dataset", "support-basics", "--user", "builder", "--wait", "0"
    )
    assert code == 2
    run = Run.objects.get()
    assert f"timed out after 0s: run #{run.pk} is queued, 0/2 trials done (it goes on)" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["nobody", "--dataset", "support-basics"], "no agent 'nobody'"),
        (["refunds", "--dataset", "nothing"], "no dataset 'nothing'"),
        (["refunds", "--dataset", "support-basics", "--version", "9"], "refunds has no version 9"),
        (
            ["refunds", "--dataset", "support-basics", "--dataset-version", "9"],
            "dataset support-basics has no version 9",
        ),
        (
            ["refunds", "--dataset", "support-basics", "--repetitions", "0"],
            "run refused: repetitions must be between 1 and 100",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line_and_starts_nothing(builder, refunds, agent, args, message):
    version(agent, GOOD)
    code, out = evaluate(*args, "--user", "builder")
    assert code == 2 and message in out
    assert not Run.objects.exists()


def test_without_a_user_it_is_a_usage_error(refunds, agent, monkeypatch):
    monkeypatch.delenv("SHERLOCK_USER", raising=False)
    version(agent, GOOD)
    code, out = evaluate("refunds", "--dataset", "support-basics")
    assert code == 2 and "usage: pass --user USERNAME" in out


def test_the_user_may_come_from_sherlock_user(builder, refunds, agent, monkeypatch):
    monkeypatch.setenv("SHERLOCK_USER", "builder")
    version(agent, GOOD)
    code, _ = evaluate("refunds", "--dataset", "support-basics", "--wait", "0")
    assert code == 2  # timed out under the test's transaction, but started as the Builder
    assert Run.objects.get().requested_by == builder


def test_defaults_are_the_live_version_and_the_newest_frozen_dataset_version(
    builder, refunds, agent
):
    first = version(agent, GOOD)
    version(agent, GOOD)
    agent.live_version = first
    agent.save(update_fields=["live_version"])
    factories.dataset_version(refunds.dataset, cases=[("x", {"amount": 1}, {})], frozen=False)
    evaluate("refunds", "--dataset", "support-basics", "--user", "builder", "--wait", "0")
    run = Run.objects.get()
    assert (run.agent_version, run.dataset_version) == (first, refunds)


@pytest.mark.parametrize("persona", ["editor", "publisher", "outsider"])
def test_only_a_builder_may_start_a_run(request, persona, refunds, agent):
    request.getfixturevalue(persona)
    version(agent, GOOD)
    code, out = evaluate("refunds", "--dataset", "support-basics", "--user", persona)
    assert code == 2
    expected = "no agent 'refunds'" if persona == "outsider" else "run refused: You may not"
    assert expected in out
    assert not Run.objects.exists()


def test_summary_prints_the_judges_statements_citing_the_runs_cases(
    live_db, builder, refunds, agent, judge_settings, llm_server
):
    version(agent, SCRIPTED)  # the Tools check fails on both cases
    llm_server.script(
        [
            {
                "statements": [
                    {"kind": "failures", "text": "No tool was called.", "cases": ["small"]},
                    {"kind": "worst", "text": "An invented case.", "cases": ["huge"]},
                ]
            }
        ]
    )
    code, out = evaluate("refunds", "--dataset", "support-basics", "--user", "builder", "--summary")
    assert code == 1, out  # the verdict's exit status
    assert "  [failures] No tool was called. (small)" in out
    assert "An invented case." not in out  # it cited a case the run does not have


def test_summary_without_a_judge_says_why(live_db, builder, refunds, agent, settings):
    settings.SHERLOCK_JUDGE_BASE_URL = ""
    version(agent, SCRIPTED)
    code, out = evaluate("refunds", "--dataset", "support-basics", "--user", "builder", "--summary")
    assert code == 1, out
    assert "summary: unavailable: No judge is configured" in out
