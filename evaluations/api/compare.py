"""`GET /api/v1/runs/compare/?a=RUN&b=RUN`: two runs side by side.

`a` is the baseline, `b` the candidate. The answer holds

- ``table``: the five measures of both runs, one row each, in the contract table's cells, and
  ``a``/``b``: each run's measures in full (``ContractResult.as_dict``) and the thresholds its
  gates used (``thresholds``: ``AppliedThresholds.as_dict``): those of the publishing policy in
  force for the run's agent, as the publish gate, the run page and the compare page apply them,
  else the default thresholds (``evaluations.contract.applied``, one query for both runs). The
  top-level ``thresholds`` says which in words, per side when the two differ;
- ``cases``: per-case changes from the case results: ``regressed`` (passed in a, fails in b),
  ``improved``, ``newly_unscored`` (a verdict in a, none in b), ``newly_scored``,
  ``newly_flaky``, ``no_longer_flaky``, and cases run by only one side;
- ``paired``: B paired with A on the cases with a verdict in both (same dataset version, both
  completed; else null): the counts, B's pass rate minus A's with Tango's 95 % interval, and
  McNemar's exact p on the discordant cases;
- ``comparable`` and ``differences``: two runs are comparable when they pinned the same dataset
  version with the same check versions, quality grader and judge models
  (``Run.comparability``); every difference is named, so a change of grader is never read as
  a change of agent.

Both runs come from ``Run.objects.for_user``: a run the user may not see is a 404, exactly like
one that does not exist. A missing or malformed parameter is a 400 naming it.
"""

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.generics import get_object_or_404
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluations.contract import format_cells, render_table
from evaluations.contract.runs import run_contract
from evaluations.models import Run
from evaluations.reads.compare import case_changes, comparability_differences, paired_runs
from evaluations.verdict import verdicts_of
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
        help_text="'thresholds of policy «name» vN', or the default thresholds when no policy "
        "applies"
    )
    policy = PolicyBriefSerializer(allow_null=True, help_text="null: the default thresholds")
    values = serializers.DictField(
        help_text="The contract thresholds (the policy's fields; decimals as strings)"
    )


class SideSerializer(serializers.Serializer):
    run = RunBriefSerializer()
    measures = serializers.JSONField(help_text="ContractResult.as_dict(): counts, ratios, gates")
    thresholds = AppliedThresholdsSerializer()
    verdict = serializers.JSONField(
        help_text="The run's verdict (`GET /api/v1/runs/{id}/verdict/`'s body), null while "
        "it has not finished: outcome, exit_code, reasons, gates, cases, missing"
    )


class CaseChangesSerializer(serializers.Serializer):
    regressed = serializers.ListField(child=serializers.CharField())
    improved = serializers.ListField(child=serializers.CharField())
    newly_unscored = serializers.ListField(
        child=serializers.CharField(), help_text="Cases with a verdict in A and none in B."
    )
    newly_scored = serializers.ListField(
        child=serializers.CharField(), help_text="Cases unscored in A with a verdict in B."
    )
    newly_flaky = serializers.ListField(child=serializers.CharField())
    no_longer_flaky = serializers.ListField(child=serializers.CharField())
    only_in_a = serializers.ListField(child=serializers.CharField())
    only_in_b = serializers.ListField(child=serializers.CharField())


class PairedSerializer(serializers.Serializer):
    cases = serializers.IntegerField(help_text="Cases with a verdict in both runs")
    both = serializers.IntegerField(help_text="Passed in both")
    only_b = serializers.IntegerField(source="only_candidate", help_text="Passed only in B")
    only_a = serializers.IntegerField(source="only_live", help_text="Passed only in A")
    neither = serializers.IntegerField()
    difference = serializers.FloatField(help_text="B's pass rate minus A's")
    low = serializers.FloatField(help_text="Tango's 95 % interval of the difference")
    high = serializers.FloatField()
    mcnemar_p = serializers.FloatField(help_text="McNemar's exact test on the discordant cases")


class ComparisonSerializer(serializers.Serializer):
    a = SideSerializer()
    b = SideSerializer()
    table = serializers.ListField(
        child=serializers.DictField(child=serializers.CharField()),
        help_text="One row per run, the contract table's cells.",
    )
    markdown = serializers.CharField(help_text="The same table as markdown.")
    thresholds = serializers.CharField(
        help_text="The thresholds the gates used, in words (per side when they differ)"
    )
    cases = CaseChangesSerializer()
    paired = PairedSerializer(
        allow_null=True,
        help_text="B paired with A on the same cases; null unless both completed one dataset "
        "version",
    )
    comparable = serializers.BooleanField()
    differences = serializers.ListField(child=serializers.CharField())


def _paired(a, b):
    paired = paired_runs(a, b)
    return None if paired is None else PairedSerializer(paired).data


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
        # The verdict function of every surface, one provider call for both sides.
        verdicts = verdicts_of(list({run.pk: run for run in runs.values()}.values()))
        verdict = {name: verdicts[run.pk] for name, run in runs.items()}
        applied = {name: verdict[name].applied for name in runs}
        results = {
            name: verdict[name].contract or run_contract(run, applied[name].thresholds)
            for name, run in runs.items()
        }
        differences = comparability_differences(runs["a"], runs["b"])
        return Response(
            {
                **{
                    name: {
                        "run": RunBriefSerializer(runs[name]).data,
                        "measures": results[name].as_dict(),
                        "thresholds": applied[name].as_dict(),
                        "verdict": verdict[name].as_dict(
                            url=request.build_absolute_uri(
                                reverse("evaluations:run-detail", args=[runs[name].pk])
                            )
                        ),
                    }
                    for name in ("a", "b")
                },
                "table": [
                    format_cells(results[name], verdict=verdict[name]) for name in ("a", "b")
                ],
                "markdown": render_table(
                    [results["a"], results["b"]], [verdict["a"], verdict["b"]], units=True
                ),
                "thresholds": (
                    applied["a"].source
                    if applied["a"] == applied["b"]
                    else f"a: {applied['a'].source}; b: {applied['b'].source}"
                ),
                "cases": case_changes(runs["a"], runs["b"]),
                "paired": _paired(runs["a"], runs["b"]),
                "comparable": not differences,
                "differences": differences,
            }
        )
