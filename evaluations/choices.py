"""Choices of the evaluations app, and the allowed run and trial transitions (declared once)."""

from django.db import models

from sherlock.core.states import StateMachine


class RunStatus(models.TextChoices):
    # A run of a `client` version waits for its transcripts (docs/client.md): no worker takes
    # it until the client finishes it (or it expires), then it is queued for scoring.
    WAITING = "waiting", "waiting for the client"
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    COMPLETED = "completed", "completed"
    FAILED = "failed", "failed"
    CANCELLED = "cancelled", "cancelled"


RUN_TERMINAL = {RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED}
# queued -> completed: a run finished before any shard started it (every trial ended some
# other way, e.g. given up by the reaper); finishing a cancelled run leaves it cancelled.
# waiting -> queued: the client finished uploading (or the run expired), its transcripts are
# scored by the workers as any run's answers are.
RUN_TRANSITIONS = {
    RunStatus.WAITING: {RunStatus.QUEUED, RunStatus.CANCELLED},
    RunStatus.QUEUED: {
        RunStatus.RUNNING,
        RunStatus.COMPLETED,
        RunStatus.CANCELLED,
        RunStatus.FAILED,
    },
    RunStatus.RUNNING: {RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED},
}
# The one writer of `Run.status` after creation: a shard starting it, finishing, cancelling.
RUN_STATES = StateMachine("Run", "status", RUN_TRANSITIONS)


class RunPurpose(models.TextChoices):
    ADHOC = "adhoc", "ad hoc"
    GATE = "gate", "gate"
    EXTERNAL = "external", "external (imported trials)"
    SCHEDULED = "scheduled", "scheduled"


class TrialStatus(models.TextChoices):
    PENDING = "pending", "pending"
    RUNNING = "running", "running"
    COMPLETED = "completed", "completed"  # the agent answered and every check was scored
    ERROR = "error", "error"  # the agent call failed; its checks are recorded as `error`
    CANCELLED = "cancelled", "cancelled"


TRIAL_FINISHED = {TrialStatus.COMPLETED, TrialStatus.ERROR, TrialStatus.CANCELLED}


class CheckStatus(models.TextChoices):
    PASSED = "passed", "passed"
    FAILED = "failed", "failed"
    SCORED = "scored", "scored (no threshold)"
    SKIPPED = "skipped", "skipped"
    ERROR = "error", "error"


class CaseStatus(models.TextChoices):
    """A case's state over a run's repetitions (`evaluations.checks.scoring.case_state`)."""

    PASSED = "passed", "passed"
    FAILED = "failed", "failed"
    FLAKY = "flaky", "flaky"
    UNSCORED = "unscored", "unscored"


class LabelSource(models.TextChoices):
    """How the result a label was given to was chosen: by the queue's ranking (the most
    instructive first: disagreements, scores near the threshold), or at random for calibration,
    the only labels an estimate corrected for the judge's error may use."""

    QUEUE = "queue", "the labelling queue's ranking"
    SAMPLE = "sample", "a random sample for calibration"


class CheckMode(models.TextChoices):
    BLOCKING = "blocking", "blocking"
    INFORMATIVE = "informative", "informative"


class CostKind(models.TextChoices):
    AGENT = "agent", "agent under test"
    SCORING = "scoring", "scoring"
    SUMMARY = "summary", "summary"


class OutcomeVerdict(models.TextChoices):
    VERIFIED = "verified", "verified"
    FAILED = "failed", "failed"
    UNAVAILABLE = "unavailable", "unavailable"


class EffectState(models.TextChoices):
    VERIFIED = "verified", "verified"
    FAILED = "failed", "failed"
    UNKNOWN = "unknown", "unknown"


class BillingCoverage(models.TextChoices):
    BILLED = "billed", "billed"
    ESTIMATED = "estimated", "estimated"
    MISSING = "missing", "missing"
