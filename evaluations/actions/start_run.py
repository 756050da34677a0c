"""StartRun: create a run and every planned trial, then enqueue its shards on commit."""

import secrets

from django.conf import settings
from django.db import transaction

from agents.choices import Adapter
from evaluations.choices import RunPurpose, RunStatus
from evaluations.costs.estimate import estimate_run
from evaluations.engine import enqueue_run
from evaluations.models import CaseVersion, Run, Trial
from evaluations.reads.run_rights import may_run_on
from evaluations.verdict.sequential import seeded_order
from sherlock.core.actions import Action
from sherlock.core.errors import ActionDenied, ActionInvalid
from sherlock.core.permissions import user_can

# Seeds fit a signed 64-bit column on every database.
SEED_LIMIT = 2**63


class StartRun(Action):
    """Start one evaluation of `agent_version` on `dataset_version` with `repetitions`.

    The run, its trials (case x repetition) and its estimate are created in one transaction and
    the shards enqueued once it commits, so a worker never looks for rows not there yet. Gate
    runs pin frozen dataset versions; an ad-hoc run may pin the draft (its `comparability`
    says so). A version of a dataset the user may not see is refused as missing;
    `acting_user=None` is the system (a publish request's gate run). A `client` version's run
    starts `waiting` for the `sherlock` client's uploads (docs/client.md, "A run's life").
    With `stop_early` its cases run in an order drawn from `seed` (a random one when None) and
    the run stops once its gates are decided (docs/contract.md, "Stopping early").
    """

    noun = "run"
    verb = "start"

    def __init__(
        self,
        *,
        acting_user,
        agent_version,
        dataset_version,
        repetitions=1,
        purpose=RunPurpose.ADHOC,
        source=None,
        stop_early=False,
        seed=None,
    ):
        super().__init__(acting_user=acting_user)
        self.stop_early, self.seed = stop_early, seed
        self.source = source or {}
        self.agent_version = agent_version
        self.dataset_version = dataset_version
        self.repetitions = repetitions
        self.purpose = purpose

    def check(self):
        user = self.acting_user
        if user is not None and not user_can(user, "build", self.agent_version.agent):
            raise ActionDenied("You may not start runs of this agent (Builder role needed).")
        dataset = self.dataset_version.dataset
        if user is not None and not may_run_on(user, self.agent_version.agent, dataset):
            # As every surface lists only the versions of visible datasets, one named anyway
            # reads as one that does not exist; the attempt is audited as a hidden refusal.
            hidden = ActionInvalid(
                "no such dataset version, or one you may not see",
                code="does_not_exist",
                field="dataset_version",
            )
            hidden.refusal = ActionDenied(
                f"dataset version {self.dataset_version.pk} ({self.dataset_version}) is not "
                "visible to the user: answered as not found",
                code="not_found",
                field="dataset_version",
            )
            raise hidden
        if not isinstance(self.repetitions, int) or not 1 <= self.repetitions <= 100:
            raise ActionInvalid("repetitions must be between 1 and 100", field="repetitions")
        if self.stop_early and self.agent_version.adapter == Adapter.CLIENT:
            raise ActionInvalid(
                "a client version's run cannot stop early: its client makes every call",
                field="stop_early",
            )
        if self.seed is not None and not self.stop_early:
            raise ActionInvalid("a seed orders the cases of a run that stops early", field="seed")
        if self.seed is not None and not (
            isinstance(self.seed, int) and 0 <= self.seed < SEED_LIMIT
        ):
            raise ActionInvalid(f"seed must be between 0 and {SEED_LIMIT - 1}", field="seed")
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
        trials = len(case_versions) * self.repetitions
        waiting = self.agent_version.adapter == Adapter.CLIENT
        seed = None
        if self.stop_early:
            seed = secrets.randbelow(SEED_LIMIT) if self.seed is None else self.seed
            # Trials are created, hence taken by the workers, in the seed's case order.
            rank = {pk: i for i, pk in enumerate(seeded_order({c for _, c in case_versions}, seed))}
            case_versions.sort(key=lambda row: rank[row[1]])
        run = Run.objects.create(
            stop_early=self.stop_early,
            seed=seed,
            status=RunStatus.WAITING if waiting else RunStatus.QUEUED,
            source=self.source,
            agent_version=self.agent_version,
            dataset_version=self.dataset_version,
            repetitions=self.repetitions,
            purpose=self.purpose,
            requested_by=self.acting_user,
            trials_total=trials,
            estimate=estimate_run(
                self.agent_version,
                self.dataset_version,
                checks,
                len(case_versions),
                self.repetitions,
            ),
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
        self.audit(
            target=run,
            after={
                "agent_version": self.agent_version.pk,
                "dataset_version": self.dataset_version.pk,
                "repetitions": self.repetitions,
                "purpose": self.purpose,
                "status": run.status,
                "trials": run.trials_total,
                **({"stop_early": True, "seed": seed} if self.stop_early else {}),
                "estimate": {k: run.estimate[k] for k in ("calls", "usd", "price_missing")},
                **({"source": self.source} if self.source else {}),
            },
        )
        if not waiting:
            transaction.on_commit(lambda: enqueue_run(run.pk))
        return run
