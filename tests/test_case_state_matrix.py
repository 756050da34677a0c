"""One case state and one verdict word on every surface, for the runs that used to read
"passed" when nothing had decided them.

A matrix of runs through the real engine (a judge that dies after its first answer, an agent
that is down, no judge configured, every blocking check not applicable, a not-applicable skip
beside a scored pass) is read back from every surface that shows case states: the engine's
stored `CaseResult`, `GET /api/v1/case-results/?run=`, the run page's results table,
`manage.py evaluate`'s JSON summary and the run's JUnit XML (the file the client writes too);
and the verdict word from the verdict API, the run page and the JUnit `verdict` testcase. They
must all agree, and an unscored case is never passed anywhere.
"""

import re

import pytest

from evaluations.management.commands.evaluate import Command as Evaluate
from evaluations.models import CaseResult
from evaluations.reads.junit import run_junit
from evaluations.verdict import run_verdict
from governance.models import PublishingPolicy
from tests.support import factories
from tests.support.governance import api_client
from tests.support.junit import outcomes, read_junit
from tests.support.llm_server import server_error

SHAPE = {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}
POLITE = {
    "label": "Polite",
    "kind": "custom",
    "threshold": 0.5,
    "params": {"criterion": "The answer is polite.", "anchors": "0 = rude, 1 = polite"},
}
# Skipped when the case has no reference contexts: a check that does not apply, not a failure
# to run.
OVERLAP = {"label": "Recall", "kind": "context_recall_overlap", "threshold": 0.5}
GOOD = {"quotes": ["ok"], "reason": "Polite.", "score": 1}

DOWN = {"raise": "connection refused by the agent's endpoint"}
# run kind -> (checks, case inputs, the judge's answers or None for no judge,
#              the sorted case states with reasons, the verdict word)
MATRIX = {
    "judge dies after one answer": (
        [SHAPE, POLITE],
        [{"output": "ok one"}, {"output": "ok two"}, {"output": "ok three"}],
        [GOOD] + [server_error(500)] * 30,
        [("passed", ""), ("unscored", "judge unavailable"), ("unscored", "judge unavailable")],
        "incomplete",
    ),
    "agent down": (
        [SHAPE],
        [DOWN, DOWN],
        None,
        [("unscored", "agent error"), ("unscored", "agent error")],
        "incomplete",
    ),
    "no judge configured": (
        [POLITE],
        [{"output": "one"}],
        None,
        [("unscored", "judge unavailable")],
        "incomplete",
    ),
    "every blocking check not applicable": (
        [OVERLAP],
        [{"output": "one"}],
        None,
        [("unscored", "every blocking check skipped")],
        "incomplete",
    ),
    "not-applicable skip beside a scored pass": (
        [SHAPE, OVERLAP],
        [{"output": "one"}, {"output": "two"}],
        None,
        [("passed", ""), ("passed", "")],
        # The cases passed on their scored check; the release still wants every blocking
        # result scored (a skip's reason does not say whose is missing): incomplete, with the
        # same word everywhere (docs/checks.md, "Case states").
        "incomplete",
    ),
}
JUNIT = {"passed": "passed", "failed": "failure", "flaky": "failure", "unscored": "error"}


def page_states(client, run):
    html = client.get(f"/runs/{run.pk}/").content.decode()
    word = re.search(r'id="verdict"[^>]*data-outcome="(\w+)"', html).group(1)
    table = re.search(r'<table id="results">(.*?)</table>', html, re.S).group(1)
    rows = re.findall(
        r'<tr>\s*<td><a href="[^"]*">([^<]+)</a>.*?<span class="status (\w+)">', table, re.S
    )
    return dict(rows), word


@pytest.mark.parametrize("kind", MATRIX, ids=list(MATRIX))
def test_every_surface_gives_the_same_case_states_and_verdict_word(
    kind, builder, client, settings, llm_server, django_capture_on_commit_callbacks
):
    from evaluations.judge import reset_default_judges

    checks, inputs, answers, expected, word = MATRIX[kind]
    if answers is None:
        settings.SHERLOCK_JUDGE_BASE_URL = ""
    else:
        settings.SHERLOCK_JUDGE_BASE_URL = llm_server.url
        settings.SHERLOCK_JUDGE_TIMEOUT = 1
        settings.SHERLOCK_JUDGE_MAX_RETRIES = 2
        settings.SHERLOCK_JUDGE_MAX_BACKOFF = 0.01
        llm_server.script(answers)
    reset_default_judges()
    version = factories.agent_version(callable_path="tests.support.agents_under_test.scripted")
    # The agent's own policy, with no budget and the cost not required: the verdict word here
    # is about the cases, not about a contract this agent never reports to.
    PublishingPolicy.objects.create(
        name="Matrix", agent=version.agent, version=1, coverage_required=False
    )
    dataset_version = factories.dataset_version(
        cases=[(f"case-{i}", spec, {}) for i, spec in enumerate(inputs)], checks=checks
    )
    run = factories.start_run(builder, version, dataset_version, django_capture_on_commit_callbacks)
    reset_default_judges()
    assert run.status == "completed", run.error

    stored = {
        r.case.key: (r.status, r.reason)
        for r in CaseResult.objects.filter(run=run).select_related("case")
    }
    assert sorted(stored.values()) == sorted(expected), kind
    states = {key: status for key, (status, _) in stored.items()}

    rows = api_client(builder).get("/api/v1/case-results/", {"run": run.pk}).json()["results"]
    assert {row["case"]: (row["status"], row["reason"]) for row in rows} == stored, kind
    assert not any(row["passed"] for row in rows if row["status"] != "passed"), kind

    client.force_login(builder)
    shown, page_word = page_states(client, run)
    assert shown == states, kind

    verdict = run_verdict(run)
    cases = list(CaseResult.objects.filter(run=run).select_related("case"))
    summary = Evaluate().summary(run, cases, verdict)
    assert {c["case"]: c["status"] for c in summary["cases"]} == states, kind
    assert not any(c["passed"] for c in summary["cases"] if c["status"] != "passed"), kind

    suite = read_junit(run_junit(run, verdict))
    found = outcomes(suite)
    assert {key: found[key] for key in states} == {k: JUNIT[s] for k, s in states.items()}

    api_word = api_client(builder).get(f"/api/v1/runs/{run.pk}/verdict/").json()["outcome"]
    assert api_word == page_word == verdict.outcome, kind
    junit_word = "passed" if found["verdict"] == "passed" else suite_verdict_type(suite)
    assert junit_word == verdict.outcome, kind
    if word is not None:
        assert verdict.outcome == word, (kind, verdict.reason_texts)


def suite_verdict_type(suite):
    (case,) = [case for case in suite if case.name == "verdict"]
    return case.result[0].type
