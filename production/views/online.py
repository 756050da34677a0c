"""The pages of online scoring: an agent's production page (the live version's contract over
sliding windows beside its gate run, today's judge spend under the cap, the lag to scores,
the latest scored traces and an open rollback proposal with its two verbs), and the online
rule's editor. Every button is shown only when the action's `check()` would let this user
use it, and calls the same action as the API; a refusal comes back on the page under its
field, answered 400, 403 or 409 as the API would. Agents come from `for_user`: 404 otherwise.
"""

import json
from datetime import timedelta
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from agents.models import Agent
from evaluations.contract import GATE_LABELS, TABLE_COLUMNS, format_cells, page_columns
from evaluations.models import DatasetVersion
from production.actions.confirm_rollback_proposal import ConfirmRollbackProposal
from production.actions.create_online_rule import CreateOnlineRule
from production.actions.dismiss_rollback_proposal import DismissRollbackProposal
from production.actions.online_rule_fields import check_may_write, partial_errors
from production.actions.update_online_rule import UpdateOnlineRule
from production.choices import ScoreState
from production.models import OnlineRule, RollbackProposal, TraceScore
from production.online.contract import lag_figures, production_contract
from production.online.rules import rule_checks
from production.online.spend import day_spend
from production.reads.metrics import metrics_json, production_metrics
from sherlock.core import json_text
from sherlock.core.api.errors import domain_status
from sherlock.core.errors import ActionError, InvalidFields
from sherlock.core.forms import show_refusal
from sherlock.core.hidden import visible_or_404
from sherlock.core.htmx import render_page
from sherlock.core.permissions import user_can
from sherlock.core.pickers import Picker

PROPOSAL_VERBS = {"confirm": ConfirmRollbackProposal, "dismiss": DismissRollbackProposal}
RECENT = 20


def _agents(request):
    return Agent.objects.for_user(request.user, "view").select_related("live_version")


def _gates(result):
    first = result.first_failing_gate
    return [
        {
            "label": GATE_LABELS[gate.name],
            "status": gate.status,
            "css": {"pass": "pass", "fail": "fail"}.get(gate.status, "na"),
            "detail": gate.detail,
            "first": gate.name == first,
        }
        for gate in result.gates
    ]


def _row(result):
    cells = format_cells(result, explained=True)
    return [cells[column] for column in TABLE_COLUMNS]


@login_required
def production_page(request, slug, refusal=None, status=200):
    agent = visible_or_404(request, _agents(request), slug=slug)
    contract = production_contract(agent)
    rule = OnlineRule.objects.filter(agent=agent).select_related("library_version").first()
    spend = None
    if rule is not None:
        spent, reserved, capped_at, capped, stopped_by = day_spend(rule)
        spend = {
            "spent": spent,
            "reserved": reserved,
            "capped_at": capped_at,
            "capped": capped,
            "cap": rule.daily_cap_usd,
            "stopped_by": stopped_by,
            "raised": stopped_by is not None and rule.daily_cap_usd > stopped_by,
        }
    count, p50, p95 = lag_figures(agent, timezone.now() - timedelta(hours=24))
    proposal = (
        RollbackProposal.objects.filter(agent=agent)
        .select_related("from_version", "to_version", "decided_by")
        .first()
    )
    may_decide = user_can(request.user, "publish", agent)
    recent = list(
        TraceScore.objects.filter(agent=agent)
        .exclude(state=ScoreState.SCORING)
        .select_related("trace", "agent_version")
        .order_by("-id")[:RECENT]
    )
    windows = []
    if contract is not None:
        windows = [
            {"window": window, "row": _row(window.result), "gates": _gates(window.result)}
            for window in contract.windows
        ]
    context = {
        "agent": agent,
        "contract": contract,
        "windows": windows,
        "gate_row": _row(contract.gate) if contract and contract.gate else None,
        "gate_gates": _gates(contract.gate) if contract and contract.gate else [],
        "columns": page_columns(),  # the pages' heads: every figure says its unit
        "rule": rule,
        "rule_checks": [c.label for c in rule_checks(rule)] if rule else [],
        "may_edit": user_can(request.user, "build", agent),
        "spend": spend,
        "lag": {"count": count, "p50": p50, "p95": p95},
        "proposal": proposal,
        "may_decide": may_decide,
        "refusal": refusal,
        "recent": recent,
    }
    context["metrics"] = metrics_json(production_metrics(agent, request.GET.get("range", "48h")))
    response = render_page(request, "production/production.html", context)
    response.status_code = status
    return response


@login_required
@require_POST
def proposal_verb(request, pk, verb):
    action_class = PROPOSAL_VERBS.get(verb)
    proposals = RollbackProposal.objects.for_user(request.user, "view").select_related("agent")
    proposal = visible_or_404(request, proposals, pk=pk)
    if action_class is None:
        return redirect("production:agent", slug=proposal.agent.slug)
    reason = request.POST.get("reason", "")
    try:
        action_class(acting_user=request.user, proposal=proposal, reason=reason).execute()
    except ActionError as exc:
        refusal = {"verb": verb, "message": str(exc), "reason": reason}
        return production_page(
            request, proposal.agent.slug, refusal=refusal, status=domain_status(exc)
        )
    done = "rolled back: the previous version is live" if verb == "confirm" else "dismissed"
    messages.success(request, f"Rollback proposal {proposal.pk} {done}.")
    return redirect("production:agent", slug=proposal.agent.slug)


def _pretty_json(value):
    return json.dumps(value, indent=2) if value not in (None, "", [], {}) else ""


def library_chosen(user, rule, posted):
    """The dataset version the picker shows as chosen (the posted one, or the rule's own before a
    post) when it is a frozen version `user` may see or the rule's own, even hidden from them:
    keeping it is not picking it (`online_rule_fields`), and a picker without it would drop it
    on the next save.
    The versions to choose from are the picker's (`/pick/dataset-version/?state=frozen`), never
    listed on the page. One query."""
    own = rule.library_version_id if rule is not None else None
    chosen = str(own or "") if posted is None else str(posted)
    if not chosen.isdigit():
        return []
    versions: QuerySet[Any]
    if chosen == str(own):
        versions = DatasetVersion.objects.filter(pk=chosen)
    else:
        versions = DatasetVersion.objects.for_user(user, "view").filter(
            pk=chosen, frozen_at__isnull=False
        )
    return [
        (str(v.pk), f"{v.dataset.slug} v{v.number}") for v in versions.select_related("dataset")
    ]


class OnlineRuleForm(forms.Form):
    """The rule's fields as a person types them: JSON only for filters, checks and the outcome
    verifier (their shapes are in docs/production-online.md). It validates nothing of the
    rule itself: the actions do, and their errors are put back on each field."""

    active = forms.BooleanField(required=False, label="active (scores traces)")
    sampling_rate = forms.CharField(label="sampling rate (0 to 1)")
    filters = forms.CharField(
        required=False,
        label="filters",
        widget=forms.Textarea(attrs={"rows": 4, "cols": 80}),
        help_text='A JSON list, e.g. [{"on": "resource", "key": "deployment.environment", '
        '"op": "equals", "value": "prod"}]; every filter must hold.',
    )
    # A picker whose value the action checks (a version the user may not see reads as one
    # that does not exist): a ChoiceField would add its own "not one of the choices" beside it.
    library_version = forms.CharField(
        required=False,
        label="checks of a dataset version",
        widget=Picker("dataset-version", params={"state": "frozen"}, placeholder="none"),
        help_text="Frozen versions of the datasets you may see: type a slug or name.",
    )
    library_labels = forms.CharField(
        required=False,
        label="checks of it to run",
        help_text="Labels of that version's checks, comma-separated (empty: all).",
    )
    checks = forms.CharField(
        required=False,
        label="own checks",
        widget=forms.Textarea(attrs={"rows": 5, "cols": 80}),
        help_text='A JSON list of checks, e.g. [{"label": "fast", "kind": "latency", '
        '"params": {"max_ms": 2000}, "threshold": 1}] (docs/checks.md).',
    )
    quality_check = forms.CharField(
        required=False, label="quality check", help_text="The check scoring task quality."
    )
    outcome_check = forms.CharField(
        required=False,
        label="outcome verifier",
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text="A verifier as a case's outcome check (JSON, docs/contract.md).",
    )
    verify_effects = forms.BooleanField(required=False, label="verify the tools' effects")
    completion_tool = forms.CharField(
        required=False,
        label="completion tool",
        help_text="A trace that called this tool declared its task complete (empty: only the "
        "sherlock.declared_complete span attribute declares it).",
    )
    judge_model = forms.CharField(
        required=False, label="judge model (pinned)", help_text="Empty: the configured one."
    )
    daily_cap_usd = forms.CharField(label="daily judge spend cap (USD)")

    JSON_FIELDS = ("filters", "checks", "outcome_check")

    def __init__(self, *args, user, rule=None, **kwargs):
        super().__init__(*args, **kwargs)
        posted = (self.data.get("library_version") or None) if self.is_bound else None
        self.fields["library_version"].widget.choices = library_chosen(user, rule, posted)

    @classmethod
    def of(cls, rule, user):
        if rule is None:
            return cls(
                user=user,
                initial={
                    "active": True,
                    "sampling_rate": "1",
                    "daily_cap_usd": "1.00",
                    "verify_effects": True,
                },
            )
        return cls(
            user=user,
            rule=rule,
            initial={
                "active": rule.active,
                "sampling_rate": f"{rule.sampling_rate:g}",
                "filters": _pretty_json(rule.filters),
                "library_version": str(rule.library_version_id or ""),
                "library_labels": ", ".join(rule.library_labels or []),
                "checks": _pretty_json(rule.checks),
                "quality_check": rule.quality_check,
                "outcome_check": _pretty_json(rule.outcome_check),
                "verify_effects": rule.verify_effects,
                "completion_tool": rule.completion_tool,
                "judge_model": rule.judge_model,
                "daily_cap_usd": str(rule.daily_cap_usd),
            },
        )

    def values(self):
        """The typed values as the actions take them; JSON that does not parse is an error on
        its field (returned with the values)."""
        data: dict[str, Any] = {}
        errors: dict[str, str] = {}
        raw = self.data
        data["active"] = raw.get("active") in ("on", "true", "1")
        data["verify_effects"] = raw.get("verify_effects") in ("on", "true", "1")
        rate = raw.get("sampling_rate", "").strip()
        try:
            data["sampling_rate"] = float(rate)
        except ValueError:
            errors["sampling_rate"] = "must be a number from 0 to 1"
        for name in self.JSON_FIELDS:
            text = raw.get(name, "").strip()
            if not text:
                data[name] = {} if name == "outcome_check" else []
                continue
            try:
                data[name] = json_text.loads(text)
            except ValueError as exc:
                errors[name] = f"not JSON: {exc}"
        data["library_version"] = raw.get("library_version") or None
        labels = raw.get("library_labels", "")
        data["library_labels"] = [part.strip() for part in labels.split(",") if part.strip()]
        for name in ("quality_check", "completion_tool", "judge_model", "daily_cap_usd"):
            data[name] = raw.get(name, "").strip()
        return data, errors


@login_required
def online_rule_page(request, slug):
    agent = visible_or_404(request, _agents(request), slug=slug)
    rule = OnlineRule.objects.filter(agent=agent).first()
    refusal, status = None, 200
    if request.method == "POST":
        form = OnlineRuleForm(request.POST, user=request.user, rule=rule)
        values, errors = form.values()
        try:
            if errors:
                for name, message in errors.items():
                    form.add_error(name, message)
                status = 400
                # The fields that parsed are checked all the same: every error at once.
                parsed = {k: v for k, v in values.items() if k not in errors}
                verb = (
                    CreateOnlineRule(acting_user=request.user, agent=agent)
                    if rule is None
                    else UpdateOnlineRule(acting_user=request.user, rule=rule, changes={})
                )
                for error in partial_errors(verb, agent, parsed, rule):
                    if error.field in form.fields and error.field not in form.errors:
                        form.add_error(error.field, str(error))
            elif rule is None:
                CreateOnlineRule(acting_user=request.user, agent=agent, **values).execute()
            else:
                UpdateOnlineRule(acting_user=request.user, rule=rule, changes=values).execute()
        except InvalidFields as exc:
            show_refusal(form, exc)
            status = 400
        except ActionError as exc:
            refusal, status = str(exc), domain_status(exc)
        if status == 200:
            messages.success(request, "Online rule saved: it applies to traces scored from now.")
            return redirect("production:agent", slug=agent.slug)
    else:
        form = OnlineRuleForm.of(rule, request.user)
        try:
            check_may_write(request.user, agent)
        except ActionError as exc:
            refusal = str(exc)
    context = {
        "agent": agent,
        "rule": rule,
        "form": form,
        "refusal": refusal,
        "back": reverse("production:agent", kwargs={"slug": agent.slug}),
    }
    response = render_page(request, "production/online_rule.html", context)
    response.status_code = status
    return response


@login_required
def production_index(request):
    """The agents you may see, each with its live version, rule and open proposal: three
    queries whatever their number."""
    agents = list(_agents(request).order_by("slug"))
    ids = [agent.pk for agent in agents]
    rules = {rule.agent_id: rule for rule in OnlineRule.objects.filter(agent_id__in=ids)}
    proposals = {
        p.agent_id: p
        for p in RollbackProposal.objects.filter(agent_id__in=ids, state="open").select_related(
            "from_version", "to_version"
        )
    }
    rows = [(agent, rules.get(agent.pk), proposals.get(agent.pk)) for agent in agents]
    return render_page(request, "production/index.html", {"rows": rows})
