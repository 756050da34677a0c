"""StartRun: create a run and every planned trial, then enqueue its shards on commit."""

from django.conf import settings
from django.db import transaction

from agents.actions.base import Action
from agents.audit import audit
from agents.errors import ActionDenied, ActionInvalid
from agents.permissions import user_can
from evaluations.choices import RunPurpose
from evaluations.models import CaseVersion, Run, Trial


class StartRun(Action):
    """Start one evaluation of `agent_version` on `dataset_version` with `repetitions`.

    The run and all its trials (case x repetition, unique together) are created in one
    transaction; the shards are enqueued only once it commits, so a worker never looks for
    rows that are not there yet. Gate runs pin frozen dataset versions only; an ad-hoc run may
    pin the draft, and its `comparability` says so. `acting_user=None` is the system (a gate
    run started by a publish request, whose own action checked the requester).
    """

    def __init__(
        self,
        *,
        acting_user,
        agent_version,
        dataset_version,
        repetitions=1,
        purpose=RunPurpose.ADHOC,
    ):
        super().__init__(acting_user=acting_user)
        self.agent_version = agent_version
        self.dataset_version = dataset_version
        self.repetitions = repetitions
        self.purpose = purpose

    def check(self):
        user = self.acting_user
        if user is not None and not user_can(user, "build", self.agent_version.agent):
            raise ActionDenied("You may not start runs of this agent (Builder role needed).")
        if not isinstance(self.repetitions, int) or not 1 <= self.repetitions <= 100:
            raise ActionInvalid("repetitions must be between 1 and 100", field="repetitions")
        if self.purpose == RunPurpose.GATE and not self.dataset_version.is_frozen:
            raise ActionInvalid("gate runs pin frozen dataset versions", field="dataset_version")

    def perform(self):
        case_versions = list(
            CaseVersion.objects.filter(dataset_version=self.dataset_version).values_list(
                "pk", "case_id"
            )
        )
        if not case_versions:
            raise ActionInvalid("the dataset version has no cases", field="dataset_version")
        checks = list(self.dataset_version.checks.all())
        run = Run.objects.create(
            agent_version=self.agent_version,
            dataset_version=self.dataset_version,
            repetitions=self.repetitions,
            purpose=self.purpose,
            requested_by=self.acting_user,
            trials_total=len(case_versions) * self.repetitions,
            comparability={
                "dataset_version": self.dataset_version.pk,
                "dataset_frozen": self.dataset_version.is_frozen,
                "checks": {c.label: c.version_hash for c in checks},
                "judge_models": sorted(
                    {c.judge_model or settings.SHERLOCK_JUDGE_MODEL for c in checks}
                ),
            },
        )
        Trial.objects.bulk_create(
            Trial(run=run, case_version_id=cv_pk, case_id=case_pk, repetition=rep)
            for cv_pk, case_pk in case_versions
            for rep in range(1, self.repetitions + 1)
        )
        audit(
            "evaluations.run.start",
            actor=self.acting_user,
            target=run,
            after={
                "agent_version": self.agent_version.pk,
                "dataset_version": self.dataset_version.pk,
                "repetitions": self.repetitions,
                "purpose": self.purpose,
                "trials": run.trials_total,
            },
        )
        transaction.on_commit(lambda: enqueue_run(run.pk))
        return run


def enqueue_run(run_id):
    """Split the run's unfinished trials into shards and enqueue one django-q2 task each."""
    from django_q.tasks import async_task

    from evaluations.choices import TrialStatus

    size = settings.SHERLOCK_SHARD_SIZE
    ids = list(
        Trial.objects.filter(run_id=run_id, status=TrialStatus.PENDING)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    for start in range(0, len(ids), size):
        async_task(
            "evaluations.tasks.run_shard",
            run_id,
            ids[start : start + size],
            task_name=f"run-{run_id}-shard-{start // size}",
            group=f"run-{run_id}",
        )
