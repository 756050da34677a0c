"""Production traces in the labelling queue, and their labels in calibration
(docs/production-online.md, "Labelling production traces").

A scored trace's result of a **model check the online rule reused from a dataset version** can
be labelled by an Editor of that dataset, as a run's result can: the label counts toward the
dataset check's calibration (`evaluations.reads.calibration.LABEL_SOURCES`, registered by this app's
`ready()`), under the key the trace was judged with. The rule's own checks belong to no dataset
and have no calibration: their results are not offered.
"""

from __future__ import annotations

from evaluations.actions.label_check_result import LABELLABLE
from evaluations.checks import MODEL_KINDS
from evaluations.models import Check
from evaluations.reads.label_queue import editable_datasets
from production.choices import ScoreState
from production.models import TraceLabel, TraceScore

QUEUE_SCORES = 200  # the newest scored traces the queue reads
QUEUE_SHOWN = 50


def labels_of_checks(check_ids):
    """Every production label of `check_ids`' results, with what calibration reads (one
    query). Registered as a calibration label source."""
    return list(
        TraceLabel.objects.filter(check_config_id__in=list(check_ids)).select_related(
            "labeled_by", "check_config", "trace_score__trace"
        )
    )


def library_checks(rule_version_ids):
    """{(version id, label): Check} of the model checks of these dataset versions."""
    return {
        (check.dataset_version_id, check.label): check
        for check in Check.objects.filter(
            dataset_version_id__in=rule_version_ids, kind__in=MODEL_KINDS
        ).select_related("dataset_version__dataset")
    }


def queue(user, agent=None):
    """The production results `user` may still label, newest first: (score, check, result)
    for each model-check result of a library check of a dataset the user edits, among the
    newest `QUEUE_SCORES` scored traces (three queries)."""
    datasets = editable_datasets(user)
    scores = (
        TraceScore.objects.filter(
            state=ScoreState.SCORED, rule__library_version__dataset__in=datasets
        )
        .select_related("trace", "agent", "agent_version", "rule")
        .order_by("-id")
    )
    if agent is not None:
        scores = scores.filter(agent=agent)
    queued = list(scores[:QUEUE_SCORES])
    checks = library_checks({score.rule.library_version_id for score in queued})
    done = set(
        TraceLabel.objects.filter(labeled_by=user, trace_score__in=queued).values_list(
            "trace_score_id", "check_config_id"
        )
    )
    found = []
    for score in queued:
        for result in score.results or []:
            if not isinstance(result, dict) or result.get("status") not in LABELLABLE:
                continue
            check = checks.get((score.rule.library_version_id, result.get("label")))
            if check is None or (score.pk, check.pk) in done:
                continue
            found.append((score, check, result))
            if len(found) >= QUEUE_SHOWN:
                return found
    return found
