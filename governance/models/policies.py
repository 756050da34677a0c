"""Publishing policies: the rules a version's evaluation must satisfy before it is published."""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import OuterRef, Q, Subquery

from governance.choices import Enforcement, RateDecision
from sherlock.core.numbers import USD

# Rates and floors are fractions of a denominator: a floor of 7 blocks every
# release, and -3 lets every one through. Validators name the field in a form or an action's
# error; the CheckConstraints below refuse the same values from any other writer.
UNIT_INTERVAL = [MinValueValidator(0.0), MaxValueValidator(1.0)]


def validate_corrected_checks(value):
    """`{check label: minimum pass rate}`, each minimum strictly between 0 and 1 (an interval
    decides it: docs/checks.md, "Gating on the corrected rate")."""
    if not isinstance(value, dict):
        raise ValidationError("an object of check labels and minimum pass rates")
    for label, minimum in value.items():
        if not str(label).strip():
            raise ValidationError("a check label may not be empty")
        if isinstance(minimum, bool) or not isinstance(minimum, int | float):
            raise ValidationError(f"the minimum of «{label}» is not a number")
        if not 0 < minimum < 1:
            raise ValidationError(f"the minimum of «{label}» must be strictly between 0 and 1")


class PolicyQuerySet(models.QuerySet):
    def current(self, scope_key):
        """The newest version of one scope ("global" or "agent:<id>"), or None."""
        return self.filter(scope_key=scope_key).order_by("-version").first()

    def in_force_for(self, agent):
        """The policy that governs `agent`: its own newest version, else the global one (one
        query: `in_force_for_agents` of it)."""
        return self.in_force_for_agents([agent])[agent.pk]

    def in_force_for_agents(self, agents):
        """`in_force_for` of each of `agents` in one query, whatever their number:
        `{agent pk: policy or None}` (the newest version of each scope asked, by a subquery)."""
        keys = {agent.pk: f"agent:{agent.pk}" for agent in agents}
        newest = (
            self.model.objects.filter(scope_key=OuterRef("scope_key"))
            .order_by("-version")
            .values("version")[:1]
        )
        found = {
            policy.scope_key: policy
            for policy in self.filter(
                scope_key__in=[*keys.values(), "global"], version=Subquery(newest)
            )
        }
        return {pk: found.get(key) or found.get("global") for pk, key in keys.items()}


class PublishingPolicy(models.Model):
    """One version of a publishing policy, global (`agent` null) or for one agent.

    Policies are versioned: a change writes a new row with the next `version` for the same
    scope, and a decision records the exact row it used. The newest row of a scope is in force;
    an agent's own policy wins over the global one.
    """

    name = models.CharField(max_length=200)
    agent = models.ForeignKey(
        "agents.Agent", null=True, blank=True, on_delete=models.CASCADE, related_name="policies"
    )
    scope_key = models.CharField(max_length=50, editable=False, db_index=True)
    version = models.PositiveIntegerField(default=1)
    gate_datasets = models.ManyToManyField("evaluations.Dataset", blank=True, related_name="+")
    repetitions = models.PositiveIntegerField(default=1)
    min_case_pass_rate = models.FloatField(default=1.0, validators=UNIT_INTERVAL)
    # On the interval, 27 of 30 cases do not clear 0.9 as 2,700 of 3,000 do: the gate passes
    # only when the whole interval clears the rate (docs/contract.md, "Deciding on the
    # interval").
    case_pass_rate_decides_on = models.CharField(
        max_length=10,
        choices=RateDecision.choices,
        default=RateDecision.POINT,
        help_text="The point estimate passes at the rate; the interval passes only when the "
        "whole interval clears it, fails when the whole interval misses it, and otherwise "
        "reads insufficient evidence with how many cases would most likely decide.",
    )
    case_pass_rate_confidence = models.FloatField(
        default=0.95,
        validators=[MinValueValidator(0.5), MaxValueValidator(0.999)],
        help_text="The intervals' confidence, from 0.5 to 0.999: the case pass rate's on the "
        "interval, and the paired comparison with live's.",
    )
    # Paired against the live version on the same cases, the candidate's pass rate may not be
    # lower by more than this (a non-inferiority gate on Tango's interval at the confidence
    # above; docs/contract.md, "Paired against the live version"). Empty: no such gate.
    max_regression = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.0), MaxValueValidator(0.5)],
        help_text="The most the candidate's pass rate may fall below the live version's on the "
        "same cases (0.05: five points), decided on the paired interval at the confidence above. "
        "Empty: no comparison with the live version.",
    )
    # The contract's two floors (useful progress, tool-effect integrity) read the same way:
    # their point estimate, or their Wilson interval at the confidence above.
    floors_decide_on = models.CharField(
        max_length=10,
        choices=RateDecision.choices,
        default=RateDecision.POINT,
        help_text="The floors' point estimate passes at the floor; the interval passes only when "
        "the whole interval clears it, and otherwise reads insufficient evidence unless it "
        "misses it.",
    )
    # A model check's pass rate corrected for its judge's error by a random sample of human
    # labels on the run's own results (PPI++), gated on its interval at the confidence above.
    corrected_checks = models.JSONField(
        default=dict,
        blank=True,
        validators=[validate_corrected_checks],
        help_text="Model checks whose pass rate the gate reads corrected by a random sample of "
        'people\'s labels, with the minimum each must clear on its interval: {"Helpful": 0.8}. '
        "Empty: no such gate.",
    )
    gate_runs_stop_early = models.BooleanField(
        default=False,
        help_text="The gate runs a publish request starts run their cases in a random order "
        "and stop once every gate is decided (a client version's runs never do).",
    )
    enforcement = models.CharField(
        max_length=10, choices=Enforcement.choices, default=Enforcement.SOFT
    )
    # The contract's gates, in their fixed order.
    coverage_required = models.BooleanField(default=True)
    max_false_successes = models.PositiveIntegerField(default=0)
    max_unknown_effects = models.PositiveIntegerField(default=0)
    min_useful_progress = models.FloatField(
        null=True, blank=True, default=0.9, validators=UNIT_INTERVAL
    )
    min_tool_effect_integrity = models.FloatField(
        null=True, blank=True, default=0.95, validators=UNIT_INTERVAL
    )
    max_cost_per_verified_outcome_usd = models.DecimalField(
        max_digits=12,
        decimal_places=4,
        null=True,
        blank=True,
        validators=USD.validators(),
    )
    min_quality = models.FloatField(null=True, blank=True, validators=UNIT_INTERVAL)
    # A dataset without outcome verifiers (a question-answering agent with no external effects)
    # has declared completions nobody verified: named as missing evidence, and a failed
    # coverage gate only when this is set (docs/contract.md, "A dataset without outcome
    # verifiers").
    requires_verified_outcomes = models.BooleanField(
        default=False,
        help_text="Fail the coverage gate when a declared completion has no verified outcome "
        "(its case has no outcome verifier). Off: such a dataset is gated on its checks and "
        "cases, and the verdict names the missing outcome verification.",
    )
    # Separation of duties and bypass options.
    creator_may_not_publish = models.BooleanField(default=True)
    bypass_requires_second_admin = models.BooleanField(default=False)
    bypass_expiry_hours = models.PositiveIntegerField(default=72)
    # Four eyes only count when the second pair is not the first one's creature: an Admin whose
    # Admin rights are younger than this may not approve a bypass (0: no waiting time; an Admin
    # made by the bypass's requester is refused whatever it says,
    # governance.publishing.bypass_rules).
    bypass_approver_min_role_age_hours = models.PositiveIntegerField(
        default=0,
        help_text="Hours an Admin must have held Admin rights before approving a bypass.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = PolicyQuerySet.as_manager()

    class Meta:
        ordering = ["scope_key", "-version"]
        verbose_name_plural = "publishing policies"
        constraints = [
            models.UniqueConstraint(fields=["scope_key", "version"], name="policy_unique_version"),
            models.CheckConstraint(
                condition=Q(min_case_pass_rate__gte=0, min_case_pass_rate__lte=1),
                name="policy_pass_rate_in_unit_interval",
            ),
            models.CheckConstraint(
                condition=Q(min_useful_progress__isnull=True)
                | Q(min_useful_progress__gte=0, min_useful_progress__lte=1),
                name="policy_progress_floor_in_unit_interval",
            ),
            models.CheckConstraint(
                condition=Q(min_tool_effect_integrity__isnull=True)
                | Q(min_tool_effect_integrity__gte=0, min_tool_effect_integrity__lte=1),
                name="policy_effect_floor_in_unit_interval",
            ),
            models.CheckConstraint(
                condition=Q(min_quality__isnull=True) | Q(min_quality__gte=0, min_quality__lte=1),
                name="policy_quality_floor_in_unit_interval",
            ),
            models.CheckConstraint(
                condition=Q(max_cost_per_verified_outcome_usd__isnull=True)
                | Q(
                    max_cost_per_verified_outcome_usd__gte=0,
                    max_cost_per_verified_outcome_usd__lte=USD.high,
                ),
                name="policy_cost_budget_in_range",
            ),
            models.CheckConstraint(
                condition=Q(case_pass_rate_decides_on__in=RateDecision.values),
                name="policy_rate_decision_valid",
            ),
            models.CheckConstraint(
                condition=Q(floors_decide_on__in=RateDecision.values),
                name="policy_floors_decision_valid",
            ),
            models.CheckConstraint(
                condition=Q(
                    case_pass_rate_confidence__gte=0.5, case_pass_rate_confidence__lte=0.999
                ),
                name="policy_rate_confidence_in_range",
            ),
            models.CheckConstraint(
                condition=Q(case_pass_rate_decides_on=RateDecision.POINT)
                | Q(min_case_pass_rate__gt=0, min_case_pass_rate__lt=1),
                name="policy_interval_rate_strictly_inside",
            ),
            models.CheckConstraint(
                condition=Q(floors_decide_on=RateDecision.POINT)
                | (
                    (
                        Q(min_useful_progress__isnull=True)
                        | Q(min_useful_progress__gt=0, min_useful_progress__lt=1)
                    )
                    & (
                        Q(min_tool_effect_integrity__isnull=True)
                        | Q(min_tool_effect_integrity__gt=0, min_tool_effect_integrity__lt=1)
                    )
                ),
                name="policy_interval_floors_strictly_inside",
            ),
            models.CheckConstraint(
                condition=Q(max_regression__isnull=True)
                | Q(max_regression__gte=0, max_regression__lte=0.5),
                name="policy_max_regression_in_range",
            ),
            models.CheckConstraint(condition=Q(repetitions__gte=1), name="policy_repetitions_min"),
            models.CheckConstraint(
                condition=Q(enforcement__in=Enforcement.values), name="policy_enforcement_valid"
            ),
        ]

    def __str__(self):
        return f"{self.name} v{self.version}"

    def save(self, *args, **kwargs):
        self.scope_key = f"agent:{self.agent_id}" if self.agent_id else "global"
        super().save(*args, **kwargs)

    def clean(self):
        super().clean()
        rate = self.min_case_pass_rate
        deciding = self.case_pass_rate_decides_on == RateDecision.INTERVAL
        if deciding and isinstance(rate, float | int) and not 0 < rate < 1:
            # No interval ever clears 1 nor misses 0: such a gate would never be decided.
            raise ValidationError(
                {
                    "case_pass_rate_decides_on": "deciding on the interval needs a minimum case "
                    "pass rate strictly between 0 and 1 (no interval clears 1)"
                }
            )
        floors = (self.min_useful_progress, self.min_tool_effect_integrity)
        if self.floors_decide_on == RateDecision.INTERVAL and any(
            isinstance(floor, float | int) and not 0 < floor < 1 for floor in floors
        ):
            raise ValidationError(
                {
                    "floors_decide_on": "deciding the floors on the interval needs each floor "
                    "set strictly between 0 and 1, or empty (no interval clears 1)"
                }
            )

    @property
    def scope_text(self):
        """Where the policy holds, in names: "agent support-bot" or "global" (reads `agent`)."""
        return f"agent {self.agent.slug}" if self.agent else "global"
