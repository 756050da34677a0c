"""The run page tells the truth first, and every cell leads to its reason (points 2-3).

The run page: the verdict (failed when a case failed or the contract fails, naming the first
failing gate), the five-metric contract table, a banner when blocking checks went unscored, and
the grid filtered by failed/flaky/check and paginated with a constant number of queries. The
trial page: one case of a run, a repetition at a time, with every check's reason and evidence.
"""

import io
import re

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluations.choices import CheckStatus
from evaluations.models import CaseResult, CheckResult, JudgeCall, Run, Trial
from tests.support import factories
from tests.support.contract_runs import refinish

TOOLS = [{"label": "Tools", "kind": "tools_used", "params": {}, "threshold": 1.0}]


@pytest.fixture
def flaky_run(builder, django_capture_on_commit_callbacks):
    """Two repetitions of one case whose agent calls the expected tool every other time."""
    version = factories.agent_version(callable_path="tests.support.agents_under_test.flaky")
    dataset_version = factories.dataset_version(
        cases=[
            ("alternating", "q", {"expected_tools": [{"name": "kb.search"}]}),
            ("plain", "hello", {}),
        ],
        checks=TOOLS,
    )
    return factories.start_run(
        builder, version, dataset_version, django_capture_on_commit_callbacks, reps=2
    )


@pytest.fixture
def signed_in(client, builder, password):
    client.login(username=builder.username, password=password)
    return client


def text(response):
    assert response.status_code == 200, response.status_code
    return re.sub(r"\s+", " ", response.content.decode())


def queries(client, url):
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx)


# --- the run page -----------------------------------------------------------------------------


def test_a_run_with_a_failed_case_reads_failed_and_shows_the_contract(signed_in, flaky_run):
    page = text(signed_in.get(f"/runs/{flaky_run.pk}/"))
    assert 'id="verdict" class="verdict bad"' in page
    # The plain case's only blocking check does not apply to it: no verdict, never a pass.
    assert "FAILED" in page and "1 of 1 cases failed, 1 without a verdict" in page
    assert 'id="contract"' in page and "useful progress" in page and "false success" in page
    # Every cost says its unit: the article's "cost/run" is a trial's.
    assert "cost per trial" in page and "cost per verified outcome" in page
    assert "cost/run" not in page and " per trial<" in page
    assert "1. coverage:" in page  # the gates, in the contract's order


def test_every_case_row_and_cell_links_to_its_trial_page(signed_in, flaky_run):
    page = text(signed_in.get(f"/runs/{flaky_run.pk}/"))
    url = f"/runs/{flaky_run.pk}/cases/alternating/"
    assert f'<a href="{url}">alternating</a>' in page
    assert f'href="{url}#check-tools"' in page


def test_the_grid_filters_failed_flaky_and_by_check(signed_in, flaky_run):
    base = f"/runs/{flaky_run.pk}/"
    failed = text(signed_in.get(base + "?show=failed"))
    assert "/cases/alternating/" in failed and "/cases/plain/" not in failed
    flaky = text(signed_in.get(base + "?show=flaky&check=Tools"))
    assert "/cases/alternating/" in flaky and "/cases/plain/" not in flaky
    # "plain" expects no tool: its Tools cell passes, so it has no failed Tools cell.
    by_check = text(signed_in.get(base + "?show=failed&check=Tools"))
    assert "/cases/alternating/" in by_check and "/cases/plain/" not in by_check
    every = text(signed_in.get(base + "?show=all&check=Tools"))
    assert "/cases/alternating/" in every and "/cases/plain/" in every


def test_an_htmx_filter_answers_with_the_grid_alone(signed_in, flaky_run):
    response = signed_in.get(
        f"/runs/{flaky_run.pk}/?show=failed", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="grid"
    )
    body = text(response)
    assert "<html" not in body and body.strip().startswith('<section id="grid">')
    assert "/cases/alternating/" in body and "/cases/plain/" not in body


def test_an_unknown_filter_shows_every_case(signed_in, flaky_run):
    page = text(signed_in.get(f"/runs/{flaky_run.pk}/?show=nonsense&check=nope"))
    assert "/cases/alternating/" in page and "/cases/plain/" in page


def test_unscored_blocking_checks_raise_a_banner_with_the_count(signed_in, flaky_run):
    # Skipped for want of a judge: checks that could not run (not "does not apply").
    CheckResult.objects.filter(trial__run=flaky_run).update(
        status=CheckStatus.SKIPPED, score=None, reason="no judge configured"
    )
    refinish(flaky_run)
    page = text(signed_in.get(f"/runs/{flaky_run.pk}/"))
    assert 'id="unscored"' in page
    assert "4 blocking check results could not be scored" in page
    assert "no judge configured" in page
    # The release decision fails closed on unscored checks; the page does not say passed.
    assert 'class="verdict bad"' in page and "4 blocking check results not scored" in page


def test_the_banner_counts_the_checks_a_case_could_not_feed(signed_in, flaky_run):
    # "plain" names no expected tools: its Tools check is skipped in both repetitions.
    page = text(signed_in.get(f"/runs/{flaky_run.pk}/"))
    assert "2 blocking check results could not be scored" in page


def test_a_run_with_every_check_scored_has_no_banner(signed_in, flaky_run):
    CheckResult.objects.filter(trial__run=flaky_run).update(status=CheckStatus.PASSED, score=1)
    refinish(flaky_run)
    assert 'id="unscored"' not in text(signed_in.get(f"/runs/{flaky_run.pk}/"))


def test_an_unfinished_run_shows_no_verdict_yet(signed_in, flaky_run):
    Run.objects.filter(pk=flaky_run.pk).update(status="running")
    page = text(signed_in.get(f"/runs/{flaky_run.pk}/"))
    assert 'id="verdict"' not in page and 'id="contract"' not in page
    assert "Case results appear when the run finishes" in page


@pytest.fixture
def ledger(db, settings, tmp_path):
    settings.SHERLOCK_DEMO_LEDGER = str(tmp_path / "ledger.jsonl")


def test_seed_003s_fast_refund_agent_reads_failed_although_its_cases_pass(client, ledger):
    """The very mistake the release contract warns against: 5/5 cases passed, contract failed."""
    call_command("seed_demo", stdout=io.StringIO())
    fast = Run.objects.get(
        agent_version__agent__slug="refund-agent", agent_version__config__kwargs__style="fast"
    )
    assert fast.summary["passed"] == fast.summary["cases"]
    client.login(username="builder", password="sherlock-builder")
    page = text(client.get(f"/runs/{fast.pk}/"))
    assert 'class="verdict bad"' in page and "the contract fails at false success" in page
    assert f"although all {fast.summary['cases']} cases passed" in page
    assert "← first failing gate" in page
    # The gate card names the gate it failed at (it read "fail:" with nothing after it).
    assert "fail (false success)" in page


# --- scoping and queries ----------------------------------------------------------------------


def test_an_outsider_gets_404_on_the_run_and_trial_pages(client, outsider, password, flaky_run):
    client.login(username=outsider.username, password=password)
    assert client.get(f"/runs/{flaky_run.pk}/").status_code == 404
    assert client.get(f"/runs/{flaky_run.pk}/cases/alternating/").status_code == 404


def test_an_unknown_case_is_404(signed_in, flaky_run):
    assert signed_in.get(f"/runs/{flaky_run.pk}/cases/nowhere/").status_code == 404


def test_the_trial_page_needs_a_login(client, flaky_run):
    assert client.get(f"/runs/{flaky_run.pk}/cases/alternating/").status_code == 302


def _bulk_run(builder, n_cases, capture):
    """A finished run of `n_cases` cases (three checks) made by the engine, as a user makes one."""
    version = factories.agent_version(
        factories.agent(f"bulk-{n_cases}"), callable_path="tests.support.agents_under_test.echo"
    )
    dataset_version = factories.dataset_version(
        factories.dataset(f"bulk-{n_cases}"),
        cases=[(f"c{i:04d}", "q", {}) for i in range(n_cases)],
        checks=[
            *TOOLS,
            {"label": "Fast", "kind": "latency", "params": {"max_ms": 60000}, "threshold": 1.0},
            {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1},
        ],
    )
    return factories.start_run(builder, version, dataset_version, capture)


def test_the_run_page_keeps_its_queries_whatever_the_number_of_cases(
    signed_in, builder, django_capture_on_commit_callbacks
):
    small = _bulk_run(builder, 20, django_capture_on_commit_callbacks)
    big = _bulk_run(builder, 200, django_capture_on_commit_callbacks)
    for query in ("", "?show=failed", "?show=flaky&check=Tools", "?page=2"):
        assert queries(signed_in, f"/runs/{small.pk}/{query}") == queries(
            signed_in, f"/runs/{big.pk}/{query}"
        ), query


def test_the_grid_pages_through_its_cases(signed_in, builder, django_capture_on_commit_callbacks):
    run = _bulk_run(builder, 230, django_capture_on_commit_callbacks)
    first = text(signed_in.get(f"/runs/{run.pk}/"))
    assert "page 1 of 3" in first and "/cases/c0099/" in first and "/cases/c0100/" not in first
    last = text(signed_in.get(f"/runs/{run.pk}/?page=3"))
    assert "/cases/c0229/" in last and "/cases/c0000/" not in last


def test_the_trial_page_keeps_its_queries_whatever_the_number_of_checks_and_calls(
    signed_in, flaky_run
):
    url = f"/runs/{flaky_run.pk}/cases/alternating/"
    before = queries(signed_in, url)
    trial = Trial.objects.filter(run=flaky_run, case__key="alternating").first()
    for n in range(3):
        call = JudgeCall.objects.create(
            model="judge-x", rubric_id="r", prompt_hash="h", cache_key=f"k{n}", trial=trial
        )
        CheckResult.objects.filter(trial=trial).update(judge_call_ids=[call.pk])
    assert queries(signed_in, url) == before


# --- the trial page ---------------------------------------------------------------------------


def test_the_trial_page_opens_the_failing_repetition_with_its_reason(signed_in, flaky_run):
    failing = CheckResult.objects.get(
        trial__run=flaky_run, trial__case__key="alternating", status=CheckStatus.FAILED
    )
    page = text(signed_in.get(f"/runs/{flaky_run.pk}/cases/alternating/"))
    assert f'<span class="current">{failing.trial.repetition} · failed</span>' in page
    other = 3 - failing.trial.repetition
    assert f'<a href="?repetition={other}" class="passed">{other} · passed</a>' in page
    assert 'id="check-tools"' in page and failing.reason in page
    assert "expected vs called" in page and "kb.search" in page
    assert "threshold" in page and "blocking" in page


def test_the_repetition_switcher_opens_each_repetition(signed_in, flaky_run):
    passing = CheckResult.objects.get(
        trial__run=flaky_run, trial__case__key="alternating", status=CheckStatus.PASSED
    )
    url = f"/runs/{flaky_run.pk}/cases/alternating/"
    page = text(signed_in.get(f"{url}?repetition={passing.trial.repetition}"))
    assert f'<span class="current">{passing.trial.repetition} ·' in page
    assert passing.reason in page and "kb.search" in page  # the tool call it made
    assert f'href="?repetition={3 - passing.trial.repetition}"' in page


def test_the_trial_page_shows_tool_calls_contexts_and_denied_marks(signed_in, flaky_run):
    trial = Trial.objects.filter(run=flaky_run, case__key="plain").first()
    trial.transcript = {
        "output": "Your refund of $40 is on its way.",
        "tool_calls": [
            {"name": "orders.lookup", "arguments": {"order": "A-1001"}, "result": {"total": 40}},
            {"name": "billing.apply_credit", "arguments": {"amount": 250}, "denied": True},
        ],
        "contexts": ["Refunds take 5 days."],
    }
    trial.save(update_fields=["transcript"])
    page = text(signed_in.get(f"/runs/{flaky_run.pk}/cases/plain/?repetition={trial.repetition}"))
    assert "orders.lookup" in page and "A-1001" in page and "&quot;total&quot;: 40" in page
    assert '<span class="denied"' in page and "billing.apply_credit" in page
    assert "Refunds take 5 days." in page


def test_faithfulness_claims_and_quotes_are_rendered_readably(signed_in, flaky_run):
    trial = Trial.objects.filter(run=flaky_run, case__key="plain").first()
    trial.transcript = {"output": "Shipping takes 3 days.\nReturns are free."}
    trial.save(update_fields=["transcript"])
    result = CheckResult.objects.get(trial=trial)
    result.evidence = {
        "claims": [
            {"claim": "Shipping takes 3 days", "verdict": "supported", "reason": "ctx 1"},
            {"claim": "Returns are free", "verdict": "contradicted", "reason": "ctx 2"},
        ],
        "quotes": ["Returns  are free"],
        "raw": {"odd": ["shape"]},
    }
    result.save(update_fields=["evidence"])
    page = text(signed_in.get(f"/runs/{flaky_run.pk}/cases/plain/?repetition={trial.repetition}"))
    assert '<span class="status pass">supported</span>' in page
    assert '<span class="status fail">contradicted</span>' in page
    assert "<mark>Returns are free</mark>" in page
    assert "<summary>raw</summary>" in page


def test_the_judge_calls_of_a_check_are_shown_with_prompt_answer_tokens_and_cost(
    signed_in, flaky_run
):
    trial = Trial.objects.filter(run=flaky_run, case__key="plain").first()
    call = JudgeCall.objects.create(
        model="judge-x",
        rubric_id="faithfulness",
        prompt_hash="h",
        cache_key="k",
        trial=trial,
        request={"messages": [{"role": "user", "content": "Is the claim supported?"}]},
        raw_answer='{"verdicts": []}',
        prompt_tokens=120,
        completion_tokens=8,
        latency_ms=321,
    )
    CheckResult.objects.filter(trial=trial).update(judge_call_ids=[call.pk])
    page = text(signed_in.get(f"/runs/{flaky_run.pk}/cases/plain/?repetition={trial.repetition}"))
    assert f'id="judge-{call.pk}"' in page and "judge-x" in page
    assert "Is the claim supported?" in page and "{&quot;verdicts&quot;: []}" in page
    assert "120 + 8 tokens" in page and "price missing" in page and "321 ms" in page


def test_the_case_result_is_summed_over_repetitions_on_the_trial_page(signed_in, flaky_run):
    result = CaseResult.objects.get(run=flaky_run, case__key="alternating")
    page = text(signed_in.get(f"/runs/{flaky_run.pk}/cases/alternating/"))
    assert f"{result.repetitions_passed} of {result.repetitions} repetitions passed" in page
    assert '<span class="status flaky">flaky</span>' in page


def _stored_run(n_cases):
    """A finished run of `n_cases` case results written directly (no trials): the grid's size."""
    from evaluations.models import Case

    version = factories.agent_version(factories.agent(f"stored-{n_cases}"))
    dataset_version = factories.dataset_version(
        factories.dataset(f"stored-{n_cases}"), checks=TOOLS
    )
    cases = Case.objects.bulk_create(
        Case(dataset=dataset_version.dataset, key=f"c{i:05d}") for i in range(n_cases)
    )
    run = Run.objects.create(
        agent_version=version,
        dataset_version=dataset_version,
        status="completed",
        summary={"cases": n_cases, "passed": n_cases // 2, "flaky": 0},
    )
    summary = {"status": "failed", "statuses": {"failed": 1}, "blocking": True, "flaky": False}
    CaseResult.objects.bulk_create(
        CaseResult(run=run, case=case, passed=i % 2 == 0, repetitions=1, checks={"Tools": summary})
        for i, case in enumerate(cases)
    )
    return run


def test_a_run_of_5000_cases_costs_the_queries_of_a_run_of_20(signed_in):
    small, big = _stored_run(20), _stored_run(5000)
    for query in ("", "?show=failed", "?show=failed&check=Tools", "?page=50"):
        assert queries(signed_in, f"/runs/{small.pk}/{query}") == queries(
            signed_in, f"/runs/{big.pk}/{query}"
        ), query
    assert "page 50 of 50" in text(signed_in.get(f"/runs/{big.pk}/?page=50"))


def test_the_quality_cell_says_what_its_counts_count_on_the_run_and_compare_pages(signed_in):
    """The quality grader scored both trials; one declared completion. The cell read
    "0.600 (2/1)", two out of one; it names both counts (quality)."""
    from tests.support.contract_runs import GRADER, add_trial, empty_run

    runs = []
    for number in (1, 2):
        run = empty_run(
            checks=[GRADER], agent_version=factories.agent_version(factories.agent(f"a{number}"))
        )
        add_trial(run, quality=0.5)
        add_trial(run, quality=0.7, declared_complete=False)
        runs.append(run)
    cell = "0.600 (2 trials graded, 1 declared complete)"
    page = text(signed_in.get(f"/runs/{runs[0].pk}/"))
    contract = page.split('id="contract"', 1)[1].split("</table>", 1)[0]
    assert f"<td>{cell}</td>" in contract and "(2/1)" not in contract
    compare = text(signed_in.get(f"/runs/compare/?a={runs[0].pk}&b={runs[1].pk}"))
    assert f"<td>quality</td><td>{cell}</td><td>{cell}</td>" in compare.replace("> <", "><")
    assert "(2/1)" not in compare
