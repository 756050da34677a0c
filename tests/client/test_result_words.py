"""The client's tables in words a reviewer reads: one money rule (the server's), numbers without
float noise, a gate's dict as a short sentence, and the failed cases named whether or not a
live version's run exists to compare with."""

import io
from decimal import Decimal

import pytest
from sherlock_client.result import Result, markdown, print_result, text_of, usd

from sherlock.core.money import usd as server_usd


@pytest.mark.parametrize(
    "amount",
    ["0", "0.0002", "0.00002", "0.0123", "0.125", "0.52", "1", "1.125", "13967.088", "-1200"],
)
def test_money_reads_as_the_servers_pages_read_it(amount):
    assert usd(amount) == server_usd(Decimal(amount))


def test_a_gate_value_is_words_never_a_repr():
    coverage = {"completions_without_outcome": 0, "unverified_completions": 3, "x": None}
    assert text_of(coverage) == "completions without outcome 0, unverified completions 3"
    assert text_of(0.00799999999999999) == "0.008"
    assert text_of(None) == "n/a" and text_of(True) == "yes"
    assert text_of({"cost_per_trial_usd": "0.0002", "covered_usd": "1500.5"}) == (
        "cost per trial usd $0.0002, covered usd $1,500.50"
    )
    floors = {
        "useful_progress": {"num": 9, "den": 10, "wilson95": [0.6, 0.98], "status": "pass"},
        "tool_effect_integrity": {"num": 10, "den": 10, "wilson95": None, "status": "pass"},
    }
    assert text_of(floors) == (
        "useful progress 9/10, status pass; tool effect integrity 10/10, status pass"
    )
    for shown in (text_of(coverage), text_of(floors)):
        assert "{" not in shown and "'" not in shown and "None" not in shown


def result_with(failed: int, passed: int) -> Result:
    cases = [
        {"case": f"c{i:02}", "status": "failed", "errored": 0, "repetitions": [], "error": None}
        for i in range(failed)
    ] + [
        {"case": f"p{i:02}", "status": "passed", "errored": 0, "repetitions": [], "error": None}
        for i in range(passed)
    ]
    verdict = {
        "outcome": "failed",
        "exit_code": 1,
        "url": "http://sherlock.test/runs/4/",
        "gates": [
            {
                "name": "budget",
                "state": "pass",
                "value": {"cost_per_trial_usd": "0.0002", "verified_outcomes": 1500},
                "bound": {"max": None},
                "detail": "fine",
            }
        ],
    }
    return Result(run={"id": 4}, verdict=verdict, agent="a", version="v", dataset="d", cases=cases)


def test_failed_cases_are_named_without_a_baseline(tmp_path):
    shown = markdown(result_with(25, 3))
    assert "No live version's run on this dataset to compare with." in shown
    assert "**Failed (25 cases)**: `c00`, `c01`" in shown and "`c19` and 5 more" in shown
    assert "`c20`" not in shown and "`p00`" not in shown
    assert "| budget | pass | cost per trial usd $0.0002, verified outcomes 1,500 | n/a |" in shown

    log = tmp_path / "log.txt"
    with log.open("w") as stream:
        print_result(result_with(2, 1), stream, rich=False)
    assert "  failed cases: c00, c01\n" in log.read_text()


class PendingApi:
    """A server whose run never finishes and which never holds an answer."""

    def __init__(self, timeout):
        self.session = type("Session", (), {"timeout": timeout})()
        self.calls = []

    def verdict(self, run_id, policy=None, wait=None):
        self.calls.append(wait)
        return {"outcome": "pending", "exit_code": None, "reasons": []}


@pytest.mark.parametrize("http_timeout", [5.0, 30.0])
def test_a_verdict_that_does_not_come_is_asked_for_with_a_backoff(http_timeout):
    """With no long poll to wait on (an HTTP timeout too short to hold one, or a server that
    answers at once), the client backs off between asks instead of asking in a loop."""
    from sherlock_client.flow import await_verdict

    api = PendingApi(http_timeout)
    verdict = await_verdict(api, 1, wait=1.5)
    assert verdict["reasons"][-1]["code"] == "wait_expired"
    assert 2 <= len(api.calls) <= 6, api.calls  # 0.5 s growing by half: a few asks, no storm


def test_insufficient_evidence_exits_2_and_says_the_fourth_word():
    result = Result(run={"id": 1}, verdict={"outcome": "insufficient", "exit_code": 2})
    assert (result.exit_code, result.words) == (2, "insufficient evidence")
    # An older server that sent no exit code: the outcome decides, never a pass.
    assert Result(run={"id": 1}, verdict={"outcome": "insufficient"}).exit_code == 2
    out = io.StringIO()
    print_result(result, out, rich=False)
    assert out.getvalue().startswith("INSUFFICIENT EVIDENCE: run 1")
