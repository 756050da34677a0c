"""The live htmx pages of evaluations: runs, a run's page, a trial's page, costs.

The run page tells the truth first: its verdict (failed when a case failed *or* the five-metric
contract of DESIGN section 6 fails, naming the first failing gate: `evaluations.verdicts`,
which gives the run list the same verdict in short), the contract table with
its gates under the thresholds of the publishing policy in force for the run's agent (else seed
003's defaults, and it says which), a banner when blocking checks could not be scored, then the
results grid, filtered (failed, flaky, one check) and paginated in the database. Every grid
cell and case links to the trial page (`trial_detail`), which shows one case of the run, a
repetition at a time, with the evidence of every check (rendered by
`evaluations.evidence_display`).

Every page starts from `Run.objects.for_user` (or the agents the user may see), and keeps a
constant number of queries however many rows it shows. `render_page` is the one place that
decides between the full page and an htmx partial.
"""

from datetime import timedelta
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, Max
from django.db.models.fields.json import KeyTransform
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone

from agents.models import Agent
from agents.transcripts import tool_calls
from evaluations.checks.base import as_text
from evaluations.choices import RUN_TERMINAL, CheckStatus, CostKind, TrialStatus
from evaluations.contract import GATE_LABELS, TABLE_COLUMNS, format_cells, thresholds_for
from evaluations.contract.db import run_contract
from evaluations.costs import daily_ledger, trial_cost, trials_with_judge_cost
from evaluations.evidence_display import compact, evidence_blocks, highlight_quotes, pretty
from evaluations.figures import stored_checks, unscored_of
from evaluations.models import CaseResult, CheckResult, JudgeCall, Run
from evaluations.verdicts import list_verdicts, run_verdict
from sherlock.core.htmx import render_page


def home(request):
    return redirect("evaluations:run-list")


@login_required
def run_list(request):
    """The newest 100 runs the user may see, each finished one with its verdict (PASSED, or
    FAILED and why in short: `evaluations.verdicts.list_verdicts`, the run page's rule, from
    the runs' stored figures in a constant number of queries)."""
    runs = list(
        Run.objects.for_user(request.user).select_related(
            "agent_version__agent", "dataset_version__dataset"
        )[:100]
    )
    verdicts = list_verdicts(runs)
    for run in runs:
        run.verdict = verdicts.get(run.pk)
    return render_page(
        request,
        "evaluations/run_list.html",
        {"runs": runs},
        partial="evaluations/partials/run_rows.html",
    )


GRID_PAGE_SIZE = 100
GRID_SHOW = {"all": "all cases", "failed": "failed", "flaky": "flaky"}


def check_labels(run):
    """The run's check labels in the dataset version's order (one query)."""
    return list(
        run.dataset_version.checks.order_by("position", "label").values_list("label", flat=True)
    )


def grid_filter(request, labels):
    """The grid's filter from the query string: ``show`` (all, failed, flaky) and ``check``
    (a label: then ``show`` applies to that check's cell instead of the whole case)."""
    show = request.GET.get("show", "all")
    check = request.GET.get("check", "")
    return (show if show in GRID_SHOW else "all"), (check if check in labels else "")


def results_grid(run, labels, show="all", check="", page_number=1):
    """One page of the cases x checks grid of a finished run, filtered by ``show``/``check``.

    Two queries whatever the run's size (the page count and the page): the filter runs in the
    database, on ``CaseResult.passed``/``flaky`` or, for one check, on its summary in
    ``CaseResult.checks`` (``{label: {status, flaky, ...}}``, DESIGN section 5).
    """
    results = CaseResult.objects.filter(run=run).select_related("case").order_by("case__key")
    if check:
        # The label's summary as an alias, not as "checks__<label>__...": a label may hold "__".
        results = results.alias(_summary=KeyTransform(check, "checks"))
        if show == "failed":
            results = results.filter(_summary__status=CheckStatus.FAILED)
        elif show == "flaky":
            results = results.filter(_summary__flaky=True)
        else:
            results = results.filter(checks__has_key=check)
    elif show == "failed":
        results = results.filter(passed=False)
    elif show == "flaky":
        results = results.filter(flaky=True)
    page = Paginator(results, GRID_PAGE_SIZE).get_page(page_number)
    rows = []
    for result in page:
        cells = []
        for label in labels:
            summary = result.checks.get(label)
            if summary is None:
                cells.append(None)
                continue
            statuses = ", ".join(f"{k}: {v}" for k, v in summary["statuses"].items())
            cells.append({**summary, "label": label, "title": statuses})
        rows.append(
            {
                "key": result.case.key,
                "passed": result.passed,
                "flaky": result.flaky,
                "repetitions": result.repetitions,
                "repetitions_passed": result.repetitions_passed,
                "cells": cells,
            }
        )
    return page, rows


def unscored_checks(run):
    """Blocking check results the run could not score (skipped or error: no judge configured,
    judge down, missing input), per check and status, with one reason each. A case's pass does
    not count them (DESIGN section 5), so the page must say so. A finished run's come from its
    stored figures (`evaluations.figures`); else one query."""
    stored = stored_checks(run)
    if stored is not None:
        return unscored_of(stored)
    rows = (
        CheckResult.objects.filter(
            trial__run=run,
            blocking=True,
            status__in=[CheckStatus.SKIPPED, CheckStatus.ERROR],
        )
        .values("check_config__label", "status")
        .annotate(n=Count("pk"), reason=Max("reason"))
        .order_by("check_config__position", "check_config__label", "status")
    )
    groups = [
        {
            "label": r["check_config__label"],
            "status": r["status"],
            "n": r["n"],
            "reason": r["reason"],
        }
        for r in rows
    ]
    return {"total": sum(g["n"] for g in groups), "groups": groups}


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
        "percent": round(100 * run.trials_done / run.trials_total) if run.trials_total else 0,
        # A poll that sees the run finish reloads the page once, to show the grid.
        "refresh_grid": finished and request.GET.get("part") == "progress",
    }
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
        # Numbers from an unfinished run are not evidence (DESIGN section 10): the contract and
        # the verdict appear when it ends. Under the thresholds of the publishing policy that
        # would govern publishing the run's agent, as the publish gate applies it (one query,
        # through governance's provider: evaluations.contract.applied), else seed 003's.
        applied = thresholds_for(run.agent_version.agent)
        contract = run_contract(run, applied.thresholds)
        unscored = unscored_checks(run)
        context.update(
            contract=contract,
            applied=applied,
            contract_cells=[
                format_cells(contract, explained=True)[column] for column in TABLE_COLUMNS
            ],
            contract_columns=TABLE_COLUMNS,
            gates=[
                {
                    "label": GATE_LABELS[gate.name],
                    "status": gate.status,
                    "css": gate.status.replace("/", ""),
                    "detail": gate.detail,
                    "first": gate.name == contract.first_failing_gate,
                }
                for gate in contract.gates
            ],
            verdict=run_verdict(run, contract, unscored["total"]),
            verdict_gate=GATE_LABELS.get(contract.first_failing_gate, ""),
            unscored=unscored,
        )
    return render(request, "evaluations/run_detail.html", context)


def _failing_trials(trials):
    """The ids of ``trials`` that failed a blocking check (one query), for the switcher's marks
    and the repetition a cell's link opens."""
    return set(
        CheckResult.objects.filter(
            trial__in=[t.pk for t in trials], blocking=True, status=CheckStatus.FAILED
        ).values_list("trial_id", flat=True)
    )


def _default_repetition(trials, failing):
    """The repetition a cell's link opens: the first that failed a blocking check, else the
    first in error, else the first."""
    return next(
        (t for t in trials if t.pk in failing),
        next((t for t in trials if t.status == TrialStatus.ERROR), trials[0]),
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
    failing = _failing_trials(trials)
    chosen = chosen or _default_repetition(trials, failing)
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
    quotes = []
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
        "repetitions": [
            {
                "trial": t,
                "outcome": "failed"
                if t.pk in failing or t.status == TrialStatus.ERROR
                else "passed",
            }
            for t in trials
        ],
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


KIND_COLORS = {CostKind.AGENT: "#2e90fa", CostKind.SCORING: "#9e77ed", CostKind.SUMMARY: "#f79009"}


def cost_chart(rows, days, width=720, height=160):
    """A stacked bar per day (agent, scoring, summary) as SVG shapes: no chart library. About
    seven dates label the bars, today's always."""
    today = timezone.localdate()
    dates = [today - timedelta(days=n) for n in range(days - 1, -1, -1)]
    per_day = {d: {} for d in dates}
    for row in rows:
        if row["day"] in per_day and row["total_usd"] is not None:
            kind = row["kind"]
            usd = float(row["total_usd"])
            per_day[row["day"]][kind] = per_day[row["day"]].get(kind, 0) + usd
    peak = max((sum(v.values()) for v in per_day.values()), default=0) or 1
    slot = width / len(dates)
    step = max(1, len(dates) // 7)
    plot = height - 14
    bars, ticks = [], []
    for i, day in enumerate(dates):
        y = plot
        for kind in CostKind.values:
            usd = per_day[day].get(kind, 0)
            if not usd:
                continue
            h = max(1, usd / peak * (plot - 4))
            y -= h
            bars.append(
                {
                    "x": round(i * slot + 2, 1),
                    "y": round(y, 1),
                    "w": round(slot - 4, 1),
                    "h": round(h, 1),
                    "color": KIND_COLORS[kind],
                    "title": f"{day} {kind}: ${usd:.4f}",
                }
            )
        # Ticks counted back from today, so the newest bar always has its date; a label is
        # centred under its bar, but the last ends at its bar's right edge and the first starts
        # at its left one, so that neither is cut off at the chart's edges.
        if (len(dates) - 1 - i) % step == 0:
            if i == len(dates) - 1:
                x, anchor = (i + 1) * slot - 2, "end"
            elif i == 0:
                x, anchor = 2, "start"
            else:
                x, anchor = i * slot + slot / 2, "middle"
            ticks.append({"x": round(x, 1), "anchor": anchor, "label": day.strftime("%m-%d")})
    legend = [(kind, KIND_COLORS[kind]) for kind in CostKind.values]
    return {"width": width, "height": height, "bars": bars, "ticks": ticks, "legend": legend}


@login_required
def costs(request):
    days = 30
    since = timezone.localdate() - timedelta(days=days - 1)
    rows = daily_ledger(Agent.objects.for_user(request.user), since)
    return render(
        request,
        "evaluations/costs.html",
        {"rows": rows, "days": days, "chart": cost_chart(rows, days)},
    )
