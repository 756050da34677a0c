"""An Editor's hand label of one model-check result of a production trace, to calibrate that
check (docs/production-online.md, "Labelling production traces")."""

from types import SimpleNamespace

from django.conf import settings
from django.db import models
from django.urls import reverse


class TraceLabel(models.Model):
    """The label one person gave one check's result on one scored trace: pass/fail or a score
    in [0, 1]. The check is the dataset check the online rule reused (`check_config`), so the label
    counts toward that check's calibration (`evaluations.reads.calibration`) under the key it was
    judged with (`calibration_key`: the check's kind and params with the rule's pinned judge
    model). One label per person, result and check; the latest counts."""

    trace_score = models.ForeignKey(
        "production.TraceScore", on_delete=models.CASCADE, related_name="labels"
    )
    check_config = models.ForeignKey(
        "evaluations.Check", on_delete=models.CASCADE, related_name="+"
    )
    labeled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    passed = models.BooleanField(null=True, blank=True)
    score = models.FloatField(null=True, blank=True)
    note = models.TextField(blank=True)
    calibration_key = models.CharField(max_length=16, blank=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["trace_score", "check_config", "labeled_by"],
                name="tracelabel_once_per_person",
            ),
        ]

    def __str__(self):
        return f"label of {self.check_config_id} on trace score {self.trace_score_id}"

    @property
    def check_id(self):
        """The labelled check's id, as calibration reads a label's (`LABEL_SOURCES`)."""
        return self.check_config_id

    @property
    def result(self):
        """The labelled result as the trace's score holds it (a dict; {} when gone)."""
        for item in self.trace_score.results or []:
            if isinstance(item, dict) and item.get("label") == self.check_config.label:
                return item
        return {}

    @property
    def check_result(self):
        """The result read as calibration reads a run's (`status`, `score`, `threshold`)."""
        item = self.result
        return SimpleNamespace(
            pk=None,
            status=item.get("status"),
            score=item.get("score"),
            threshold=item.get("threshold"),
        )

    @property
    def trace_url(self):
        return reverse("production:trace-detail", args=[self.trace_score.trace_id])

    @property
    def trace_name(self):
        return self.trace_score.trace.trace_id[:12]
