"""StartRun: create a run and every planned trial, then enqueue its shards on commit."""

from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Avg, Count
from django.utils import timezone

from evaluations.choices import RunPurpose, TrialStatus
from evaluations.models import CaseVersion, CheckResult, JudgeCall, ModelPrice, Run, Trial
from sherlock.core.actions import Action
from sherlock.core.audit import audit
from sherlock.core.errors import ActionDenied, ActionInvalid
from sherlock.core.permissions import user_can


class StartRun(Action):
    """Start one evaluation of `agent_version` on `dataset_version` with `repetitions`.

    The run and all its trials (case x repetition, unique together) are created in one
    transaction, with the run's estimate (calls and cost, `estimate_run`); the shards are
    enqueued only once it commits, so a worker never looks for rows that are not there yet.
    Gate runs pin frozen dataset versions only; an ad-hoc run may pin the draft, and its
    `comparability` says so. `acting_user=None` is the system (a gate run started by a publish
    request, whose own action checked the requester).
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
        trials = len(case_versions) * self.repetitions
        run = Run.objects.create(
            agent_version=self.agent_version,
            dataset_version=self.dataset_version,
            repetitions=self.repetitions,
            purpose=self.purpose,
            requested_by=self.acting_user,
            trials_total=trials,
            estimate=estimate_run(self.agent_version, self.dataset_version, checks, trials),
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
                "estimate": {k: run.estimate[k] for k in ("calls", "usd", "price_missing")},
            },
        )
        transaction.on_commit(lambda: enqueue_run(run.pk))
        return run


def enqueue_run(run_id, *, trial_ids=None, broker=None):
    """Enqueue one django-q2 task per shard of the run's pending trials (or of `trial_ids`).

    Shards are how work is spread among workers at the start (a worker that finishes its own
    shard helps with the run's other pending trials: `engine.Work`). `broker` is django-q2's
    (None: the configured one). Enqueueing every pending trial records `enqueued_at`, which the
    reaper reads as a sign of life (a few handed-back trials say nothing about the others).
    """
    from django_q.tasks import async_task

    if trial_ids is None:
        trial_ids = list(
            Trial.objects.filter(run_id=run_id, status=TrialStatus.PENDING)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        Run.objects.filter(pk=run_id).update(enqueued_at=timezone.now())
    size = settings.SHERLOCK_SHARD_SIZE
    for start in range(0, len(trial_ids), size):
        async_task(
            "evaluations.tasks.run_shard",
            run_id,
            list(trial_ids[start : start + size]),
            task_name=f"run-{run_id}-shard-{start // size}",
            group=f"run-{run_id}",
            broker=broker,
        )


# --- the estimate ----------------------------------------------------------------------------

# A rubric's prompt and a short structured answer, when a check has no history yet.
DEFAULT_JUDGE_TOKENS = (900, 150)
# Judge calls per case of the kinds that make more than one (docs/checks.md, "The judge").
DEFAULT_CALLS = {"faithfulness": 2}
HISTORY = 50


def estimate_run(agent_version, dataset_version, checks, trials):
    """What a run will cost before it starts: calls and USD for the agent and each model check.

    Judge tokens per call and calls per trial come from the newest results of the same check
    (same dataset, label and kind), else from defaults; the agent's cost from its version's
    recent trials (their cost, else their tokens x the version model's price). An upper bound:
    case overrides that disable a check are not subtracted. A part without a price makes `usd`
    null and is named in `price_missing`, never counted as $0.
    """
    from evaluations.checks import REGISTRY

    prices = {price.model: price for price in ModelPrice.objects.all()}
    judged = bool(settings.SHERLOCK_JUDGE_BASE_URL)
    price_missing, per_check, judge_calls, judge_usd = set(), {}, 0, Decimal(0)
    for check in checks:
        kind = REGISTRY.get(check.kind)
        if kind is None or not kind.uses_model:
            continue
        model = check.judge_model or settings.SHERLOCK_JUDGE_MODEL
        calls_per_trial, prompt, completion, basis = _judge_history(dataset_version, check)
        calls = round(trials * calls_per_trial) if judged else 0
        price = prices.get(model)
        usd = price.cost(round(calls * prompt), round(calls * completion)) if price else None
        if usd is None and calls:
            price_missing.add(model)
        judge_calls += calls
        judge_usd += usd or 0
        per_check[check.label] = {
            "model": model,
            "calls": calls,
            "prompt_tokens_per_call": round(prompt),
            "completion_tokens_per_call": round(completion),
            "usd": _money(usd),
            "basis": basis if judged else "no judge configured: the check will be skipped",
        }
    judge_complete = not price_missing
    agent_usd, agent_basis = _agent_estimate(agent_version, trials, prices)
    if agent_usd is None:
        price_missing.add(f"agent {agent_version}")
    known = judge_usd + (agent_usd or 0)
    return {
        "trials": trials,
        "agent_calls": trials,
        "judge_calls": judge_calls,
        "calls": trials + judge_calls,
        "agent_usd": _money(agent_usd),
        "agent_basis": agent_basis,
        "judge_usd": _money(judge_usd) if judge_complete else None,
        "usd": _money(known) if not price_missing else None,
        "usd_known": _money(known),
        "price_missing": sorted(price_missing),
        "checks": per_check,
    }


def _judge_history(dataset_version, check):
    """(calls per trial, prompt tokens per call, completion tokens per call, basis)."""
    recent = (
        CheckResult.objects.filter(
            check_config__dataset_version__dataset_id=dataset_version.dataset_id,
            check_config__label=check.label,
            check_config__kind=check.kind,
        )
        .order_by("-id")
        .values_list("judge_call_ids", flat=True)[: HISTORY * 4]
    )
    results = [ids for ids in recent if ids][:HISTORY]
    if results:
        stats = JudgeCall.objects.filter(
            pk__in=[pk for ids in results for pk in ids], cached=False
        ).aggregate(n=Count("id"), prompt=Avg("prompt_tokens"), completion=Avg("completion_tokens"))
        if stats["n"]:
            return (
                stats["n"] / len(results),
                float(stats["prompt"]),
                float(stats["completion"]),
                f"the last {len(results)} results of this check",
            )
    prompt, completion = DEFAULT_JUDGE_TOKENS
    return DEFAULT_CALLS.get(check.kind, 1), prompt, completion, "defaults (no history yet)"


def _agent_estimate(agent_version, trials, prices):
    recent = list(
        Trial.objects.filter(run__agent_version=agent_version, status=TrialStatus.COMPLETED)
        .order_by("-id")
        .values_list("cost_usd", "prompt_tokens", "completion_tokens")[:HISTORY]
    )
    costs = [cost for cost, _, _ in recent if cost is not None]
    if costs:
        mean = sum(costs, Decimal(0)) / len(costs)
        return mean * trials, f"the cost of its last {len(costs)} trials"
    price = prices.get(agent_version.config.get("model") or "")
    if price is not None and recent:
        prompt = sum(p for _, p, _ in recent) / len(recent)
        completion = sum(c for _, _, c in recent) / len(recent)
        usd = price.cost(round(prompt * trials), round(completion * trials))
        return usd, f"tokens of its last {len(recent)} trials x the price of its model"
    if price is None:
        return None, "unknown: no cost history, and no price for its model"
    return None, "unknown: no trials of this version yet to measure its tokens"


def _money(value):
    return None if value is None else round(float(value), 6)
