"""The compare page (`/runs/compare/?a=RUN&b=RUN`): two runs side by side, for a person.

The same comparison as `GET /api/v1/runs/compare/` (`evaluations.api.compare`), built from the
same reads (`evaluations.reads.compare`): both runs' verdicts and five-measure contracts
(`evaluations.verdict.verdicts_of`, each run under the publishing policy in force for its agent,
as the publish gate and the run page apply it, else the defaults; one query for both runs' policies;
the page says which), the comparability verdict
(`comparability_differences`: same dataset version, check versions, quality grader and judge
models, or why not), every case whose status changed (`case_changes`), and each check's mean
score and pass rate with their deltas (`evaluations.reads.trends.check_stats`).

`a` is the baseline, `b` the candidate. `a=live` stands for the latest completed run of the
agent's live version on `b`'s dataset: the run page and the publish page link to it ("compare
with the live version's latest run on this dataset") without a query of their own, and the page
redirects to the two run ids. Without both ids the page offers two run pickers; with an id that
is not one (not digits, beyond a 64-bit integer) it offers them at 400, saying so. Runs come from
`Run.objects.for_user`: one the user may not see is a 404, like one that does not exist. A
constant number of queries, however many cases the runs have.
"""

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse

from evaluations.api.compare import case_changes, comparability_differences
from evaluations.choices import RunStatus
from evaluations.contract import (
    GATE_LABELS,
    GATE_ORDER,
    TABLE_COLUMNS,
    format_cells,
    page_columns,
)
from evaluations.contract.runs import run_contract
from evaluations.models import Run
from evaluations.pickers import run_text
from evaluations.reads.compare import check_deltas, live_baseline, paired_runs
from evaluations.verdict import POLICY_GATE_LABELS, doc_url, verdicts_of
from evaluations.views.runs import no_role_reason
from sherlock.core.htmx import render_page
from sherlock.core.inputs import parse_id
from sherlock.core.limits import excerpt

# How many case keys each change list shows (the count is always the full one).
SHOWN_CASES = 200
CHANGE_LABELS = {
    "regressed": "regressed (passed in A, fails in B)",
    "improved": "improved (failed in A, passes in B)",
    "newly_unscored": "no verdict in B (unscored: its checks could not run)",
    "newly_scored": "a verdict in B (unscored in A)",
    "newly_flaky": "newly flaky",
    "no_longer_flaky": "no longer flaky",
    "only_in_a": "only in A",
    "only_in_b": "only in B",
}


def _visible(user):
    return Run.objects.for_user(user).select_related(
        "agent_version__agent", "dataset_version__dataset"
    )


def _run_id(raw, name):
    run_id = parse_id(raw)
    if run_id is None:
        return None, f"'{name}' must be a run id, not {excerpt(raw)}"
    return run_id, None


def contract_rows(result_a, result_b, verdict_a=None, verdict_b=None):
    """The two contract tables side by side: one row per measure of the release contract, then
    one per gate with its state and detail on each side: the verdicts' gates when given (the
    contract's, then the policy's checks-scored and case-pass-rate gates), else the contract's.
    A gate only one side has is shown with the other side blank."""
    cells = [
        format_cells(result, explained=True, verdict=verdict)
        for result, verdict in ((result_a, verdict_a), (result_b, verdict_b))
    ]
    measures = [
        (label, cells[0][column], cells[1][column])
        for column, label in zip(TABLE_COLUMNS[1:], page_columns()[1:], strict=True)
    ]
    sides = []
    for result, verdict in ((result_a, verdict_a), (result_b, verdict_b)):
        if verdict is not None and verdict.gates:
            sides.append({g.name: {"status": g.state, "detail": g.detail} for g in verdict.gates})
        else:
            sides.append({g.name: {"status": g.status, "detail": g.detail} for g in result.gates})
    names = [*GATE_ORDER, *(n for n in (*sides[0], *sides[1]) if n not in GATE_ORDER)]
    gates = [
        {
            "label": POLICY_GATE_LABELS.get(name, GATE_LABELS.get(name, name)),
            "a": sides[0].get(name),
            "b": sides[1].get(name),
        }
        for name in dict.fromkeys(names)
        if name in sides[0] or name in sides[1]
    ]
    return measures, gates


def _contract(run, verdict):
    """A side's contract: the verdict's, or, for a run not finished (its verdict is pending),
    the contract of its trials so far under the same thresholds."""
    if verdict.contract is not None:
        return verdict.contract

    return run_contract(run, verdict.applied.thresholds)


def _picker(request, error=None, status=200):
    """The two runs' pickers (`/pick/run/`: typed and picked, never every run listed).
    Preselected: the ids asked for, when visible, else the newest run as B and as A the newest
    run before it on the same dataset version (a pair the page can compare), or the one before
    it when there is none. Three queries whatever the number of runs."""
    visible = _visible(request.user).select_related(
        "agent_version__agent", "dataset_version__dataset"
    )
    newest = list(visible.order_by("-created_at", "-pk")[:2])
    asked = [parse_id(request.GET.get(side, "")) for side in ("a", "b")]
    chosen = {run.pk: run for run in visible.filter(pk__in=[pk for pk in asked if pk])}
    baseline = None
    if newest:
        baseline = (
            visible.filter(dataset_version_id=newest[0].dataset_version_id, pk__lt=newest[0].pk)
            .order_by("-created_at", "-pk")
            .first()
        )
    if baseline is None and len(newest) > 1:
        baseline = newest[1]
    defaults = [baseline, newest[0] if newest else None]
    sides = [chosen.get(pk) if pk else default for pk, default in zip(asked, defaults, strict=True)]
    context = {
        "picker": True,
        "any_run": bool(newest),
        "no_role": "" if newest else no_role_reason(request.user, "runs"),
        "error": error,
    }
    for side, run in zip(("a", "b"), sides, strict=True):
        context[side] = run.pk if run else ""
        context[f"{side}_text"] = run_text(run) if run else ""
    response = render_page(request, "evaluations/compare.html", context)
    response.status_code = status  # 400 for an id that is not one
    return response


@login_required
def compare(request):
    raw_a, raw_b = request.GET.get("a", ""), request.GET.get("b", "")
    if not raw_a or not raw_b or "choose" in request.GET:  # "choose": other runs than a and b
        return _picker(request)
    b_id, error = _run_id(raw_b, "b")
    if error:
        return _picker(request, error, status=400)
    visible = _visible(request.user)
    if raw_a == "live":
        candidate = get_object_or_404(visible, pk=b_id)
        baseline = live_baseline(request.user, candidate)
        if baseline is None:
            return _picker(
                request,
                f"{candidate.agent_version.agent.slug} has no live version with a completed run "
                f"on {candidate.dataset_version.dataset.slug} that you may see: pick run A.",
            )
        return redirect(f"{reverse('evaluations:compare')}?a={baseline.pk}&b={candidate.pk}")
    a_id, error = _run_id(raw_a, "a")
    if error:
        return _picker(request, error, status=400)
    runs = {run.pk: run for run in visible.filter(pk__in=[a_id, b_id])}
    if a_id not in runs or b_id not in runs:
        raise Http404("no such run, or one you may not see")
    a, b = runs[a_id], runs[b_id]
    # Each side's verdict under the policy in force for its agent (one provider call for
    # both): the run page's, the verdict API's and the gate's function.
    verdicts = verdicts_of(list({a.pk: a, b.pk: b}.values()))
    verdict_a, verdict_b = verdicts[a.pk], verdicts[b.pk]
    applied_a, applied_b = verdict_a.applied, verdict_b.applied
    result_a, result_b = _contract(a, verdict_a), _contract(b, verdict_b)
    measures, gates = contract_rows(result_a, result_b, verdict_a, verdict_b)
    changes = case_changes(a, b)
    differences = comparability_differences(a, b)
    paired = paired_runs(a, b)
    context = {
        "a": a,
        "b": b,
        "finished": a.status == RunStatus.COMPLETED and b.status == RunStatus.COMPLETED,
        "results": (result_a, result_b),
        "verdicts": (verdict_a, verdict_b),
        "applied": (applied_a, applied_b),
        "same_thresholds": applied_a == applied_b,
        "measures": measures,
        "gates": gates,
        "differences": differences,
        "comparable": not differences,
        "changes": [
            {
                "name": name,
                "label": label,
                "count": len(changes[name]),
                "keys": changes[name][:SHOWN_CASES],
                "more": max(0, len(changes[name]) - SHOWN_CASES),
            }
            for name, label in CHANGE_LABELS.items()
        ],
        "changed": any(changes[name] for name in CHANGE_LABELS),
        "paired": paired,
        "deltas": check_deltas(a, b),
        "contract_docs": doc_url("contract"),
    }
    return render_page(request, "evaluations/compare.html", context)
