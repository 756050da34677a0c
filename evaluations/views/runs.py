"""The live htmx pages of evaluations: runs, a run's page, a trial's page, costs.

The run page tells the truth first: its verdict (`evaluations.verdict.run_verdict`, the one
function the run list, the compare page and API, the verdict API, `manage.py evaluate` and the
publish decision call too: passed, failed naming the first failing gate, incomplete, or
pending), the evidence it lacks with what adds it, the contract table with its gates under the
thresholds of the publishing policy in force for the run's agent (else the defaults, and it
says which), a banner when blocking checks could not be scored, then the results grid,
filtered (failed, flaky, one check) and paginated in the database. Every grid cell and case
links to the trial page (`trial_detail`), which shows one case of the run, a repetition at a
time, with the evidence of every check (rendered by `evaluations.reads.evidence_display`).

Every page starts from `Run.objects.for_user` (or the agents the user may see), and keeps a
constant number of queries however many rows it shows. `render_page` is the one place that
decides between the full page and an htmx partial.
"""

from datetime import timedelta
from typing import Any
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone

from agents.models import Agent
from evaluations.checks import MODEL_KINDS, REGISTRY, scoring
from evaluations.checks.base import as_text
from evaluations.choices import RUN_TERMINAL, RunStatus, TrialStatus
from evaluations.contract import TABLE_COLUMNS, format_cells, page_columns
from evaluations.contract.table import gate_cell
from evaluations.costs.ledger import daily_ledger, trial_cost, trials_with_judge_cost
from evaluations.judge.setup import judges_docs_url, no_judge_skips
from evaluations.models import CaseResult, CheckResult, JudgeCall, Run
from evaluations.reads.cost_chart import cost_chart
from evaluations.reads.evidence_display import compact, evidence_blocks, highlight_quotes, pretty
from evaluations.reads.results_grid import (
    GRID_SHOW,
    check_labels,
    results_grid,
    unscored_checks,
)
from evaluations.verdict import doc_url, run_verdict, verdicts_of
from evaluations.verdict.corrected import corrected_rates
from evaluations.verdict.sequential import stopped_words
from sherlock.core.htmx import render_page
from sherlock.core.permissions import missing_role_text
from sherlock.core.transcripts import tool_calls


def home(request):
    return redirect("evaluations:run-list")


@login_required
def run_list(request):
    """The newest 100 runs the user may see, each finished one with its verdict (PASSED, or
    FAILED or INCOMPLETE and why in short: `evaluations.verdict.verdicts_of`, the run page's
    function, from the runs' stored figures in a constant number of queries)."""
    runs = list(
        Run.objects.for_user(request.user).select_related(
            "agent_version__agent", "dataset_version__dataset"
        )[:100]
    )
    verdicts = verdicts_of([run for run in runs if run.status in RUN_TERMINAL])
    for run in runs:
        run.verdict = verdicts.get(run.pk)
    return render_page(
        request,
        "evaluations/run_list.html",
        {"runs": runs, "no_role": no_role_reason(request.user, "runs") if not runs else ""},
        partial="evaluations/partials/run_rows.html",
    )


def grid_filter(request, labels):
    """The grid's filter from the query string: ``show`` (all, failed, flaky) and ``check``
    (a label: then ``show`` applies to that check's cell instead of the whole case)."""
    show = request.GET.get("show", "all")
    check = request.GET.get("check", "")
    return (show if show in GRID_SHOW else "all"), (check if check in labels else "")


# Where a client run came from (docs/client.md), as the run page shows it: label, key.
SOURCE_FIELDS = [
    ("Commit", "git_commit"),
    ("Branch", "git_branch"),
    ("Repository", "git_repository"),
    ("Pull request", "pull_request"),
    ("CI", "ci_provider"),
    ("CI run", "ci_run_id"),
    ("CI job", "ci_job_url"),
]


def source_rows(source):
    """`(label, text, href)` of a run's source; `href` only for an http(s) URL (a `javascript:`
    link the client reported is shown as text). The template escapes every text."""
    rows = []
    for label, key in SOURCE_FIELDS:
        value = (source or {}).get(key)
        if value in (None, ""):
            continue
        text = str(value)
        try:
            scheme = urlsplit(text).scheme.lower()
        except ValueError:  # "http://[" and the like: not a URL a browser could follow
            scheme = ""
        href = text if scheme in ("http", "https") else None
        rows.append((label, text, href))
    return rows


@login_required
def run_detail(request, pk):
    run = get_object_or_404(
        Run.objects.for_user(request.user).select_related(
            "agent_version__agent", "dataset_version__dataset"
        ),
        pk=pk,
    )
    finished = run.status in RUN_TERMINAL
    context = {
        "run": run,
        "finished": finished,
        "source_rows": source_rows(run.source),
        "percent": round(100 * run.trials_done / run.trials_total) if run.trials_total else 0,
        # The cases with a verdict: the pass rate's denominator, the unscored beside it.
        "decided": ((run.summary or {}).get("cases") or 0)
        - ((run.summary or {}).get("unscored") or 0),
        # A poll that sees the run finish reloads the page once, to show the grid.
        "refresh_grid": finished and request.GET.get("part") == "progress",
        "stop_early_docs": doc_url("contract", "Stopping early") if run.stop_early else "",
    }
    if run.status == RunStatus.WAITING:
        context["uploaded"] = run.trials.filter(uploaded_at__isnull=False).count()
        hours = settings.SHERLOCK_CLIENT_RUN_TIMEOUT_HOURS
        context["expires_at"] = run.created_at + timedelta(hours=hours)
    if request.GET.get("part") == "progress" and getattr(request, "htmx", False):
        return render(request, "evaluations/partials/run_progress.html", context)
    labels = check_labels(run)
    show, check = grid_filter(request, labels)
    context.update(
        labels=labels,
        show=show,
        check=check,
        show_links=[
            (name, text, "?" + urlencode({"show": name, **({"check": check} if check else {})}))
            for name, text in GRID_SHOW.items()
        ],
        grid_query=urlencode({"show": show, **({"check": check} if check else {})}),
    )
    if finished:
        context["page"], context["grid"] = results_grid(
            run, labels, show, check, request.GET.get("page") or 1
        )
    if getattr(request, "htmx", False) and request.htmx.target == "grid":
        return render_page(
            request,
            "evaluations/run_detail.html",
            context,
            "evaluations/partials/results_grid.html",
        )
    if finished:
        # Numbers from an unfinished run are not evidence: the contract and the verdict appear
        # when it ends, under the publishing policy that would govern publishing the run's
        # agent, as the publish gate applies it (evaluations.verdict), else the defaults.
        verdict = run_verdict(run)
        contract = verdict.contract
        unscored = unscored_checks(run)
        context.update(
            verdict=verdict,
            # The progress card reads the verdict's gate cell, as the contract table does: a
            # contract that passes beside trials in error or unscored checks is no "pass".
            verdict_card=gate_cell(contract, verdict) if contract else "",
            verdict_css={"passed": "ok", "failed": "bad"}.get(verdict.outcome, ""),
            contract=contract,
            applied=verdict.applied,
            contract_cells=[
                format_cells(contract, explained=True, verdict=verdict)[column]
                for column in TABLE_COLUMNS
            ]
            if contract
            else [],
            contract_columns=page_columns(),
            gates=[
                {
                    "label": gate.label,
                    "status": gate.state,
                    "css": gate.state.replace("/", ""),
                    "detail": gate.detail,
                    "first": gate.name == verdict.first_failing_gate,
                }
                for gate in verdict.gates
            ],
            unscored=unscored,
            no_judge=no_judge_warning_for(unscored),
            judges_docs=judges_docs_url(),
            contract_docs=doc_url("contract"),
            corrected_docs=doc_url("checks", "Correcting the judge with labels"),
            outcome_docs=doc_url("contract", "A dataset without outcome verifiers"),
            calibration=(model_checks := _model_checks(run)),
            corrected=corrected_rates(
                [run],
                [check["label"] for check in model_checks],
                verdict.applied.case_pass_rate_confidence,
            )
            if model_checks
            else [],
            stopped=stopped_words(run),
        )
    return render(request, "evaluations/run_detail.html", context)


def no_judge_warning_for(unscored):
    """The no-judge sentence when results were skipped for want of a judge, else ""."""
    return no_judge_skips(g["reason"] for g in unscored["groups"])


def _model_checks(run):
    """The run's model checks with their calibration page (one query): the run page links to
    each, as the check's admin page does."""

    return [
        {"label": check.label, "url": reverse("evaluations:calibration", args=[check.pk])}
        for check in run.dataset_version.checks.order_by("position", "label")
        if getattr(REGISTRY.get(check.kind), "uses_model", False)
    ]


def repetition_states(trials):
    """Each of ``trials``' state (`scoring.repetition_state`: passed, failed or unscored), by
    id, from their blocking check results (one query; a case has at most 100 repetitions),
    for the switcher's marks and the repetition a cell's link opens."""
    results: dict[int, list[Any]] = {t.pk: [] for t in trials}
    rows = CheckResult.objects.filter(trial__in=list(results), blocking=True).values_list(
        "trial_id", "status", "check_config__kind", "reason"
    )
    for trial_id, status, kind, reason in rows:
        results[trial_id].append((status, True, kind in MODEL_KINDS, reason))
    return {
        t.pk: scoring.repetition_state(results[t.pk], agent_error=t.status == TrialStatus.ERROR)[0]
        for t in trials
    }


def _default_repetition(trials, states):
    """The repetition a cell's link opens: the first that failed, else the first unscored,
    else the first."""
    return next(
        (t for t in trials if states[t.pk] == "failed"),
        next((t for t in trials if states[t.pk] == "unscored"), trials[0]),
    )


@login_required
def trial_detail(request, pk, key):
    """One case of a run as a person reads it: input, output, tool calls, contexts, every check
    result with its evidence, the judge calls, the outcome and tool-effect evidence, and cost.
    ``?repetition=N`` switches between repetitions. A constant number of queries."""
    run = get_object_or_404(
        Run.objects.for_user(request.user).select_related(
            "agent_version__agent", "dataset_version__dataset"
        ),
        pk=pk,
    )
    of_case = trials_with_judge_cost(run).filter(case__key=key)
    # The switcher needs every repetition's number and status, not their transcripts.
    trials = list(of_case.only("pk", "repetition", "status").order_by("repetition"))
    if not trials:
        raise Http404("no such case in this run")
    wanted = request.GET.get("repetition", "")
    chosen = next((t for t in trials if str(t.repetition) == wanted), None)
    states = repetition_states(trials)
    chosen = chosen or _default_repetition(trials, states)
    trial = of_case.select_related("case", "case_version").get(pk=chosen.pk)
    case_result = CaseResult.objects.filter(run=run, case=trial.case).first()
    check_results = list(
        trial.check_results.select_related("check_config").order_by(
            "check_config__position", "check_config__label"
        )
    )
    judge_calls = {call.pk: call for call in JudgeCall.objects.filter(trial=trial).order_by("pk")}
    transcript = trial.transcript or {}
    output = transcript.get("output")
    output_text = None if output is None else as_text(output)
    quotes: list[Any] = []
    checks = []
    for result in check_results:
        evidence = result.evidence or {}
        if output_text is not None and isinstance(evidence.get("quotes"), list):
            quotes.extend(q for q in evidence["quotes"] if isinstance(q, str))
        ids = [i for i in result.judge_call_ids or [] if i in judge_calls]
        checks.append(
            {
                "result": result,
                "label": result.check_config.label,
                "kind": result.check_config.kind,
                "blocks": evidence_blocks(evidence),
                "judge_calls": [judge_calls.pop(i) for i in ids],
            }
        )
    output_html, _ = highlight_quotes(output_text, quotes) if output_text is not None else ("", [])
    try:
        calls, calls_error = tool_calls(transcript), ""
    except ValueError as exc:
        calls, calls_error = None, str(exc)
    cost, coverage = trial_cost(trial)
    context = {
        "run": run,
        "trial": trial,
        "repetitions": [{"trial": t, "outcome": states[t.pk]} for t in trials],
        "case_result": case_result,
        "case_input": pretty(trial.case_version.input),
        "expected": trial.case_version.expected,
        "expected_blocks": evidence_blocks(trial.case_version.expected),
        "expected_tools": [compact(t) for t in trial.case_version.expected_tools or []],
        "output": output,
        "output_html": output_html,
        "output_is_text": isinstance(output, str),
        "tool_calls": [
            {"call": c, "arguments": pretty(c.arguments), "result": pretty(c.result)}
            for c in calls or []
        ],
        "tool_calls_recorded": calls is not None,
        "tool_calls_error": calls_error,
        "contexts": [pretty(c) for c in transcript.get("contexts") or []],
        "checks": checks,
        "other_judge_calls": list(judge_calls.values()),
        "outcome_blocks": evidence_blocks(trial.outcome_evidence),
        "effects": trial.tool_effects or [],
        "effects_table": evidence_blocks({"tool effects": trial.tool_effects})
        if trial.tool_effects
        else [],
        "wait": pretty(trial.wait) if trial.wait else "",
        "progress": trial.progress or {},
        "cost": cost,
        "coverage": coverage,
        "judge_usd": trial.judge_usd,
        "judge_unpriced": trial.judge_unpriced,
    }
    return render(request, "evaluations/trial_detail.html", context)


@login_required
def costs(request):
    days = 30
    since = timezone.localdate() - timedelta(days=days - 1)
    rows = daily_ledger(Agent.objects.for_user(request.user), since)
    return render(
        request,
        "evaluations/costs.html",
        {
            "rows": rows,
            "days": days,
            "chart": cost_chart(rows, days),
            "no_role": no_role_reason(request.user, "costs") if not rows else "",
        },
    )


def no_role_reason(user, what):
    """An empty list's reason when it is a missing role: the person sees no agent at
    all, so "No runs yet" would be false; "" when they see one (the list is truly empty)."""
    if Agent.objects.for_user(user, "view").exists():
        return ""
    return missing_role_text(what)
