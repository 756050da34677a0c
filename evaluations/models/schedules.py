"""RunSchedule: a dataset run against an agent on its own, owned by Sherlock, fired by django-q2.

Each schedule owns one `django_q.Schedule` row (`q_schedule`) that calls
`evaluations.tasks.run_schedule(schedule_id)`; the schedule actions
(`evaluations.actions.*_schedule`) create, update and delete both in one transaction, so the
django-q2 row never outlives or disagrees with this one.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from agents.models import Agent


class RunScheduleQuerySet(models.QuerySet):
    def for_user(self, user, action="view"):
        """Schedules of the agents the user may see (scoped like runs, by the agent)."""

        return self.filter(agent__in=Agent.objects.for_user(user, action))


class RunSchedule(models.Model):
    """Run `dataset` (its latest frozen version, or `dataset_version` when pinned) against
    `agent` (its live version, or `agent_version` when pinned), by `cron` or every
    `interval_minutes` (exactly one of them), `repetitions` times per case."""

    dataset = models.ForeignKey("evaluations.Dataset", on_delete=models.CASCADE, related_name="+")
    dataset_version = models.ForeignKey(
        "evaluations.DatasetVersion",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Pinned version; empty runs the latest frozen version.",
    )
    agent = models.ForeignKey("agents.Agent", on_delete=models.CASCADE, related_name="+")
    agent_version = models.ForeignKey(
        "agents.AgentVersion",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Pinned version; empty runs the live version.",
    )
    repetitions = models.PositiveIntegerField(default=1)
    cron = models.CharField(max_length=100, blank=True, help_text="A cron expression (UTC).")
    interval_minutes = models.PositiveIntegerField(null=True, blank=True)
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    q_schedule = models.OneToOneField(
        "django_q.Schedule", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    last_run = models.ForeignKey(
        "evaluations.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    last_fired_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = RunScheduleQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(cron="") & Q(interval_minutes__isnull=False))
                | (~Q(cron="") & Q(interval_minutes__isnull=True)),
                name="run_schedule_cron_xor_interval",
            ),
        ]

    def __str__(self):
        return f"Schedule #{self.pk} {self.agent} on {self.dataset}"

    @property
    def next_run(self):
        """When django-q2 will fire it next (None while paused)."""
        if not self.active or self.q_schedule is None:
            return None
        return self.q_schedule.next_run

    def resolve(self):
        """The (agent version, dataset version) a run would use now; either may be None."""
        agent_version = self.agent_version or self.agent.live_version
        dataset_version = self.dataset_version or self.dataset.latest_frozen
        return agent_version, dataset_version
