"""The judge's ledger: every model call Sherlock makes to score, its price, and the cost ledger."""

from decimal import Decimal

from django.db import models
from django.db.models import Q
from django.db.models.functions import Coalesce

from evaluations.choices import CostKind
from sherlock.core.fields import MoneyField
from sherlock.core.money import usd as money
from sherlock.core.numbers import PRICE_PER_MILLION


class ModelPrice(models.Model):
    """USD per million input and output tokens for one model name (editable in the admin).

    A model without a row here has no price: its calls are shown as "price missing", never $0.
    """

    model = models.CharField(max_length=200, unique=True)
    usd_per_million_input = models.DecimalField(
        max_digits=12, decimal_places=6, validators=PRICE_PER_MILLION.validators()
    )
    usd_per_million_output = models.DecimalField(
        max_digits=12, decimal_places=6, validators=PRICE_PER_MILLION.validators()
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["model"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(usd_per_million_input__gte=0)
                & models.Q(usd_per_million_output__gte=0),
                name="modelprice_non_negative",
            )
        ]

    def __str__(self):
        return self.model

    def cost(self, prompt_tokens, completion_tokens):
        million = Decimal(1_000_000)
        return (
            Decimal(prompt_tokens or 0) * self.usd_per_million_input / million
            + Decimal(completion_tokens or 0) * self.usd_per_million_output / million
        ).quantize(Decimal("0.00000001"))


class JudgeCall(models.Model):
    """One call to the judge model (or one answer served from the cache), stored in full.

    `cache_key` is a hash of (model, prompt, params); a later identical question is answered
    from the newest successful call with that key instead of a new request. `usd` is null when
    the model has no `ModelPrice` (price missing), never zero.
    """

    class Status(models.TextChoices):
        OK = "ok", "ok"
        ERROR = "error", "error"

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    model = models.CharField(max_length=200)
    rubric_id = models.CharField(max_length=100)
    rubric_version = models.PositiveIntegerField(default=1)
    prompt_hash = models.CharField(max_length=64, db_index=True)
    cache_key = models.CharField(max_length=64, db_index=True)
    cached = models.BooleanField(default=False, help_text="Answered from the cache, no request.")
    attempt = models.PositiveSmallIntegerField(default=1)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OK)
    error = models.TextField(blank=True)
    request = models.JSONField(default=dict)
    response = models.JSONField(null=True, blank=True)
    raw_answer = models.TextField(blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    usd = MoneyField(null=True, blank=True)
    latency_ms = models.FloatField(default=0)
    run = models.ForeignKey(
        "evaluations.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    trial = models.ForeignKey(
        "evaluations.Trial",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="judge_calls",
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.rubric_id}@{self.rubric_version} via {self.model}"

    @property
    def price_missing(self):
        return self.usd is None and not self.cached


class JudgeProbe(models.Model):
    """One `manage.py check_judge` run: did the judge at `base_url` answer each rubric family.

    `families` maps a family (`rag`, `heuristic`, `data`, `custom`: evaluations.checks.rubrics)
    to what its probe question got: `ok`, `error`, `error_code`, `latency_ms`, `prompt_tokens`,
    `completion_tokens`, `max_tokens` and `advice` (what to change). The newest probe of the
    configured server and model is the judge's status shown by the admin and put in a run's
    estimate (`evaluations.judge.probe.judge_status`); a probe of another server says nothing
    about this one.
    """

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    base_url = models.CharField(max_length=500)
    model = models.CharField(max_length=200)
    ok = models.BooleanField(help_text="Every family got a valid answer.")
    priced = models.BooleanField(help_text="The model had a ModelPrice when probed.")
    families = models.JSONField(default=dict)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"{self.model} at {self.base_url}: {'ok' if self.ok else 'failed'}"

    @property
    def failed_families(self):
        return sorted(name for name, family in self.families.items() if not family.get("ok"))


class CostEntry(models.Model):
    """One line of the cost ledger: an agent call, a scoring (judge) call or a summary.

    Cost views group these by agent, kind and day. `usd` null means the price is missing.
    """

    kind = models.CharField(max_length=10, choices=CostKind.choices)
    day = models.DateField(db_index=True)
    at = models.DateTimeField(auto_now_add=True)
    model = models.CharField(max_length=200, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    usd = MoneyField(null=True, blank=True)
    agent = models.ForeignKey(
        "agents.Agent", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    run = models.ForeignKey(
        "evaluations.Run",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="cost_entries",
    )
    trial = models.ForeignKey(
        "evaluations.Trial", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    judge_call = models.OneToOneField(
        JudgeCall, null=True, blank=True, on_delete=models.SET_NULL, related_name="cost_entry"
    )

    class Meta:
        ordering = ["-day", "-at"]
        verbose_name_plural = "cost entries"  # not Django's "cost entrys"
        indexes = [
            models.Index(fields=["agent", "kind", "day"]),
            # Lines without a price (a trial's cost is then missing, evaluations.contract.db):
            # few, found without reading every line of a run.
            models.Index(
                fields=["trial"], condition=Q(usd__isnull=True), name="costentry_unpriced"
            ),
        ]

    def __str__(self):
        price = "price missing" if self.usd is None else money(self.usd)
        return f"{self.kind} {self.day} {price}"


class DailyCost(models.Model):
    """The cost ledger summed per day, kind, agent and run: what the cost page reads instead of
    every line (a month of a busy ledger is a million lines). Written with the lines, in their
    transaction (`evaluations.costs.ledger`), and rebuilt from them by
    `rebuild_daily_costs`; `priced` and `missing` keep a sum of unpriced lines "price missing"
    rather than $0 (docs/adapters.md, "Cost of the agent's calls").
    """

    day = models.DateField()
    kind = models.CharField(max_length=10, choices=CostKind.choices)
    agent = models.ForeignKey("agents.Agent", on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(
        "evaluations.Run", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    entries = models.PositiveIntegerField(default=0)
    priced = models.PositiveIntegerField(default=0)
    missing = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    usd = MoneyField(total=True, default=Decimal(0))

    class Meta:
        ordering = ["-day", "agent", "kind"]
        constraints = [
            # One row per key; a line bound to no run counts under run 0, as NULLs are all
            # distinct to a unique index.
            models.UniqueConstraint(
                "day",
                "kind",
                "agent",
                Coalesce("run", 0, output_field=models.BigIntegerField()),
                name="dailycost_one_row_per_key",
            )
        ]

    def __str__(self):
        return f"{self.day} {self.kind}: {self.entries} lines"
