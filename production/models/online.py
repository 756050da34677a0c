"""Online scoring of production traces: an agent's rule, each trace's score, the judge spend of
a day under the rule's cap, and the rollback proposals a breach opens (points 4-5).

- `OnlineRule`: one per agent, written only by `CreateOnlineRule`/`UpdateOnlineRule`
  (Builder or Admin of the agent, audited). It says which complete traces are scored (a
  sampling rate, deterministic per trace id, and attribute filters), by what (checks of a
  frozen dataset version reused by reference, its own checks, an outcome verifier, the tools'
  effect verifiers), with which judge model (pinned) and under which daily judge spend cap.
- `TraceScore`: what scoring a trace gave, one row per complete trace once looked at (scored,
  capped, skipped by sampling or a filter), with the contract's per-trial columns named as
  `evaluations.Trial`'s, so the production contract is the same aggregate
  (`production.online.contract`), and the lag from the trace's completion to its scores.
- `OnlineSpend`: the judge spend of one rule on one day, reserved before the judge is asked
  and settled after (`production.online.spend`): the cap is never passed by a new ask.
- `RollbackProposal`: opened by a breach of the policy over production, confirmed (the
  previous version published again through `RollBackVersion`) or dismissed by a Publisher.
"""

from decimal import Decimal

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from agents.models import AgentScopedQuerySet
from evaluations.models import ContractEvidence
from production.choices import ProposalState, ScoreState
from sherlock.core.fields import MoneyField
from sherlock.core.numbers import USD

UNIT_INTERVAL = [MinValueValidator(0.0), MaxValueValidator(1.0)]


class OnlineRule(models.Model):
    """How an agent's complete production traces are scored: which traces (`filters`), by which
    checks (a frozen `library_version`'s, some or all, and the rule's own), which check is the
    contract's task quality, the outcome and effect verifiers run on each trace, the tool that
    declares completion, the pinned `judge_model` (a window's scores come from one judge) and
    the judge spend a day may take (`daily_cap_usd`). Each field's shape and rule:
    docs/production-online.md, "Online rules".
    """

    agent = models.OneToOneField(
        "agents.Agent", on_delete=models.CASCADE, related_name="online_rule"
    )
    active = models.BooleanField(default=True)
    sampling_rate = models.FloatField(default=1.0, validators=UNIT_INTERVAL)
    filters = models.JSONField(default=list, blank=True)
    library_version = models.ForeignKey(
        "evaluations.DatasetVersion",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    library_labels = models.JSONField(default=list, blank=True)
    checks = models.JSONField(default=list, blank=True)
    quality_check = models.CharField(max_length=100, blank=True)
    outcome_check = models.JSONField(default=dict, blank=True)
    verify_effects = models.BooleanField(default=True)
    completion_tool = models.CharField(
        max_length=200,
        blank=True,
        help_text="A trace that called this tool declared its task complete (docs/production-"
        "online.md, 'Declared completion'); empty: only the sherlock.declared_complete span "
        "attribute declares it.",
    )
    judge_model = models.CharField(max_length=200, blank=True)
    daily_cap_usd = models.DecimalField(
        max_digits=12,
        decimal_places=4,
        default=Decimal("1.0000"),
        validators=USD.validators(),
    )
    # When scoring last looked at the agent's production contract for a breach (a throttle
    # shared by the workers, `production.online.scoring`); not part of the rule as written.
    breach_checked_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = AgentScopedQuerySet.as_manager()

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(sampling_rate__gte=0, sampling_rate__lte=1),
                name="onlinerule_sampling_in_unit_interval",
            ),
            models.CheckConstraint(
                condition=Q(daily_cap_usd__gte=0), name="onlinerule_cap_not_negative"
            ),
        ]

    def __str__(self):
        return f"online rule of {self.agent.slug}"


class TraceScoreQuerySet(AgentScopedQuerySet):
    def in_window(self, agent_version, since):
        """The scored traces of `agent_version` completed since `since` (a window)."""
        return self.filter(
            agent_version=agent_version, state=ScoreState.SCORED, completed_at__gte=since
        )


class TraceScore(ContractEvidence):
    """What online scoring made of one complete trace.

    `state`: `scoring` while a worker holds it, `scored` with its results, `capped` when the
    day's judge spend cap left no room for it (not scored, and said so), `skipped` when the
    sampling or a filter left it out (`reason` says which). The contract columns
    (`declared_complete` ... `effects_without_state`, `cost_usd`, `billing_coverage`) are named
    and filled as a run's `Trial` columns are, by the same evidence step
    (`evaluations.engine.evidence.collect_evidence_for`); `cost_usd` is the trace's whole cost, its
    agent cost plus its judge spend, and `billing_coverage` is `billed` only when both are
    (as a trial record's `cost`). `lag_ms` is scored_at minus the trace's `completed_at`.
    """

    trace = models.OneToOneField(
        "production.Trace", on_delete=models.CASCADE, related_name="online_score"
    )
    agent = models.ForeignKey("agents.Agent", on_delete=models.CASCADE, related_name="+")
    agent_version = models.ForeignKey(
        "agents.AgentVersion", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    rule = models.ForeignKey(
        OnlineRule, null=True, blank=True, on_delete=models.SET_NULL, related_name="scores"
    )
    state = models.CharField(max_length=10, choices=ScoreState.choices)
    reason = models.CharField(max_length=500, blank=True)
    completed_at = models.DateTimeField()
    claimed_at = models.DateTimeField()
    scored_at = models.DateTimeField(null=True, blank=True)
    lag_ms = models.PositiveIntegerField(null=True, blank=True)
    results = models.JSONField(default=list, blank=True)
    judge_call_ids = models.JSONField(default=list, blank=True)
    quality_score = models.FloatField(null=True, blank=True)
    judge_usd = MoneyField(default=Decimal(0))
    cost_usd = MoneyField(null=True, blank=True)
    billing_coverage = models.CharField(max_length=10, blank=True)

    objects = TraceScoreQuerySet.as_manager()

    class Meta:
        ordering = ["-completed_at", "-id"]
        indexes = [
            models.Index(
                fields=["agent_version", "state", "completed_at"], name="tracescore_window"
            ),
            models.Index(fields=["agent", "-scored_at"], name="tracescore_agent_recent"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(state__in=ScoreState.values), name="tracescore_state_valid"
            ),
        ]

    def __str__(self):
        return f"score of {self.trace}: {self.state}"


class OnlineSpend(models.Model):
    """The judge spend of one rule on one day: `reserved_usd` held by asks in flight (their
    estimated cost), `spent_usd` settled (their priced cost). `capped_at` is when the first ask
    found no room under the cap, `capped_cap_usd` the cap in force then; the page says scoring
    stopped then, at that cap. Raising the cap reopens the day (`spend.reopen`)."""

    rule = models.ForeignKey(OnlineRule, on_delete=models.CASCADE, related_name="spend")
    day = models.DateField()
    reserved_usd = MoneyField(total=True, default=Decimal(0))
    spent_usd = MoneyField(total=True, default=Decimal(0))
    capped_at = models.DateTimeField(null=True, blank=True)
    capped_cap_usd = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    capped_traces = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["rule", "day"], name="onlinespend_unique_day"),
        ]

    def __str__(self):
        return f"spend of rule {self.rule_id} on {self.day}"


class RollbackProposalQuerySet(AgentScopedQuerySet):
    def open_for(self, agent):
        return self.filter(agent=agent, state=ProposalState.OPEN).first()


class RollbackProposal(models.Model):
    """A proposal to publish `to_version` (the previous live version) again, opened when the
    live `from_version` breached the publishing policy over production with enough evidence
    (`breach`: the gate, the window, the counts, the bound and the limit); `to_version` is
    None when the agent had no earlier live version (the proposal can only be dismissed).
    Never acted on automatically: a Publisher confirms it (`ConfirmRollbackProposal`, through
    `RollBackVersion`) or dismisses it with a reason. One open proposal per agent."""

    agent = models.ForeignKey(
        "agents.Agent", on_delete=models.CASCADE, related_name="rollback_proposals"
    )
    from_version = models.ForeignKey(
        "agents.AgentVersion", on_delete=models.CASCADE, related_name="+"
    )
    to_version = models.ForeignKey(
        "agents.AgentVersion", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    state = models.CharField(
        max_length=10, choices=ProposalState.choices, default=ProposalState.OPEN
    )
    breach = models.JSONField(default=dict)
    opened_at = models.DateTimeField(auto_now_add=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    reason = models.TextField(blank=True)

    objects = RollbackProposalQuerySet.as_manager()

    class Meta:
        ordering = ["-opened_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent"],
                condition=Q(state=ProposalState.OPEN),
                name="rollbackproposal_one_open_per_agent",
            ),
            models.CheckConstraint(
                condition=Q(state__in=ProposalState.values), name="rollbackproposal_state_valid"
            ),
        ]

    def __str__(self):
        return f"rollback proposal #{self.pk} of {self.agent.slug} ({self.state})"
