"""`GET /api/v1/runs/compare/?a=RUN&b=RUN`: two runs side by side (seed 003's contract table).

`a` is the baseline, `b` the candidate. The answer holds

- ``table``: the five measures of both runs, one row each, in the cells of DESIGN section 6, and
  ``a``/``b``: each run's measures in full (``ContractResult.as_dict``) and the thresholds its
  gates used (``thresholds``: ``AppliedThresholds.as_dict``): those of the publishing policy in
  force for the run's agent, as the publish gate, the run page and the compare page apply them,
  else seed 003's defaults (``evaluations.contract.applied``, one query for both runs). The
  top-level ``thresholds`` says which in words, per side when the two differ;
- ``cases``: per-case changes from the case results: ``regressed`` (passed in a, fails in b),
  ``improved``, ``newly_flaky``, ``no_longer_flaky``, and cases run by only one side;
- ``comparable`` and ``differences``: two runs are comparable when they pinned the same dataset
  version with the same check versions, quality grader and judge models
  (``Run.comparability``); every difference is named, so a change of grader is never read as
  a change of agent.

Both runs come from ``Run.objects.for_user``: a run the user may not see is a 404, exactly like
one that does not exist. A missing or malformed parameter is a 400 naming it.
"""

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.generics import get_object_or_404
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluations.contract import applied_thresholds, format_cells, render_table
from evaluations.contract.db import run_contract
from evaluations.models import CaseResult, Check, Run
from sherlock.core.errors import ActionInvalid
from sherlock.core.inputs import parse_id
from sherlock.core.limits import excerpt


class RunBriefSerializer(serializers.ModelSerializer):
    agent = serializers.CharField(source="agent_version.agent.slug")
    agent_version = serializers.IntegerField(source="agent_version.number")
    dataset = serializers.CharField(source="dataset_version.dataset.slug")
    dataset_version = serializers.IntegerField(source="dataset_version.number")

    class Meta:
        model = Run
        fields = ["id", "agent", "agent_version", "dataset", "dataset_version", "status", "purpose"]


class PolicyBriefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    version = serializers.IntegerField()
    scope = serializers.ChoiceField(choices=["agent", "global"])


class AppliedThresholdsSerializer(serializers.Serializer):
    source = serializers.CharField(
        help_text="'thresholds of policy «name» vN', or seed 003's defaults when no policy applies"
    )
    policy = PolicyBriefSerializer(allow_null=True, help_text="null: seed 003's defaults")
    values = serializers.DictField(
        help_text="The contract thresholds (the policy's fields; decimals as strings)"
    )


class SideSerializer(serializers.Serializer):
    run = RunBriefSerializer()
    measures = serializers.JSONField(help_text="ContractResult.as_dict(): counts, ratios, gates")
    thresholds = AppliedThresholdsSerializer()


class CaseChangesSerializer(serializers.Serializer):
    regressed = serializers.ListField(child=serializers.CharField())
    improved = serializers.ListField(child=serializers.CharField())
    newly_flaky = serializers.ListField(child=serializers.CharField())
    no_longer_flaky = serializers.ListField(child=serializers.CharField())
    only_in_a = serializers.ListField(child=serializers.CharField())
    only_in_b = serializers.ListField(child=serializers.CharField())


class ComparisonSerializer(serializers.Serializer):
    a = SideSerializer()
    b = SideSerializer()
    table = serializers.ListField(
        child=serializers.DictField(child=serializers.CharField()),
        help_text="One row per run, the cells of DESIGN section 6.",
    )
    markdown = serializers.CharField(help_text="The same table as markdown.")
    thresholds = serializers.CharField(
        help_text="The thresholds the gates used, in words (per side when they differ)"
    )
    cases = CaseChangesSerializer()
    comparable = serializers.BooleanField()
    differences = serializers.ListField(child=serializers.CharField())


def _run_id(request, name):
    raw = request.query_params.get(name)
    if raw in (None, ""):
        raise ActionInvalid(f"query parameter '{name}' is required (a run id)", field=name)
    run_id = parse_id(raw)
    if run_id is None:
        raise ActionInvalid(
            f"query parameter '{name}' must be a run id, not {excerpt(raw)}", field=name
        )
    return run_id


def comparability_differences(a: Run, b: Run) -> list[str]:
    """What makes the scores of ``a`` and ``b`` not comparable, in words (empty: comparable)."""
    ka, kb = a.comparability or {}, b.comparability or {}
    differences = []
    if ka.get("dataset_version") != kb.get("dataset_version"):
        differences.append(f"dataset version differs: {a.dataset_version} vs {b.dataset_version}")
    checks_a, checks_b = ka.get("checks") or {}, kb.get("checks") or {}
    for label in sorted(set(checks_a) | set(checks_b)):
        if label not in checks_b:
            differences.append(f"check {label!r} only in run #{a.pk}")
        elif label not in checks_a:
            differences.append(f"check {label!r} only in run #{b.pk}")
        elif checks_a[label] != checks_b[label]:
            differences.append(
                f"check {label!r} version differs: {checks_a[label]} vs {checks_b[label]}"
            )
    judges_a, judges_b = sorted(ka.get("judge_models") or []), sorted(kb.get("judge_models") or [])
    if judges_a != judges_b:
        differences.append(
            f"judge models differ: {', '.join(judges_a) or 'none'} vs "
            f"{', '.join(judges_b) or 'none'}"
        )
    graders = [_grader(run) for run in (a, b)]
    if graders[0] != graders[1]:
        differences.append(
            f"quality grader differs: {graders[0] or 'none'} vs {graders[1] or 'none'}"
        )
    for run in (a, b):
        if (run.comparability or {}).get("dataset_frozen") is False:
            differences.append(f"run #{run.pk} pinned an unfrozen (draft) dataset version")
    return differences


def _grader(run: Run) -> str | None:
    """The run's quality grader as "label@version" (seed 003 keeps the grader version apart)."""
    check = Check.objects.filter(dataset_version_id=run.dataset_version_id, quality_grader=True)
    found = check.first()
    return f"{found.label}@{found.version_hash}" if found else None


def case_changes(a: Run, b: Run) -> dict[str, list[str]]:
    """Per-case changes from ``a`` (baseline) to ``b`` (candidate), by case key."""
    rows = CaseResult.objects.filter(run__in=[a, b]).values_list(
        "run_id", "case__key", "passed", "flaky"
    )
    sides = {a.pk: {}, b.pk: {}}
    for run_id, key, passed, flaky in rows:
        sides[run_id][key] = (passed, flaky)
    base, cand = sides[a.pk], sides[b.pk]
    both = sorted(set(base) & set(cand))
    return {
        "regressed": [k for k in both if base[k][0] and not cand[k][0]],
        "improved": [k for k in both if not base[k][0] and cand[k][0]],
        "newly_flaky": [k for k in both if cand[k][1] and not base[k][1]],
        "no_longer_flaky": [k for k in both if base[k][1] and not cand[k][1]],
        "only_in_a": sorted(set(base) - set(cand)),
        "only_in_b": sorted(set(cand) - set(base)),
    }


class RunComparisonView(APIView):
    """Two runs side by side: the five measures, per-case changes and comparability."""

    @extend_schema(
        summary="Compare two runs (the five-metric contract side by side)",
        parameters=[
            OpenApiParameter("a", int, required=True, description="the baseline run's id"),
            OpenApiParameter("b", int, required=True, description="the candidate run's id"),
        ],
        responses={
            200: ComparisonSerializer,
            400: OpenApiResponse(description='`{"detail", "code", "field"}`: bad parameter'),
            404: OpenApiResponse(description="no such run, or one you may not see"),
        },
    )
    def get(self, request):
        ids = {name: _run_id(request, name) for name in ("a", "b")}
        visible = Run.objects.for_user(request.user).select_related(
            "agent_version__agent", "dataset_version__dataset"
        )
        runs = {name: get_object_or_404(visible, pk=pk) for name, pk in ids.items()}
        in_force = applied_thresholds(run.agent_version.agent for run in runs.values())
        applied = {name: in_force[run.agent_version.agent_id] for name, run in runs.items()}
        results = {name: run_contract(run, applied[name].thresholds) for name, run in runs.items()}
        differences = comparability_differences(runs["a"], runs["b"])
        return Response(
            {
                **{
                    name: {
                        "run": RunBriefSerializer(runs[name]).data,
                        "measures": results[name].as_dict(),
                        "thresholds": applied[name].as_dict(),
                    }
                    for name in ("a", "b")
                },
                "table": [format_cells(results[name]) for name in ("a", "b")],
                "markdown": render_table([results["a"], results["b"]]),
                "thresholds": (
                    applied["a"].source
                    if applied["a"] == applied["b"]
                    else f"a: {applied['a'].source}; b: {applied['b'].source}"
                ),
                "cases": case_changes(runs["a"], runs["b"]),
                "comparable": not differences,
                "differences": differences,
            }
        )
