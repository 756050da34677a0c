"""The "start a run" form of the run list page and of the two admin actions.

A person chooses an agent version (of the agents they may build), a dataset version (of the
datasets they may see), the repetitions and whether it stops early, sees the estimate
(`estimate_start`: calls, USD, what has no price), then confirms. Confirming is `StartRun`,
which decides who may and what is valid; a refusal comes back as a message on the form. The
posted `estimated` key carries what was estimated, so a confirmation of other choices than
those on screen estimates again instead of starting a run nobody saw the cost of.
"""

from django import forms

from agents.models import Agent, AgentVersion
from evaluations.actions.start_run import StartRun
from evaluations.contract import thresholds_for
from evaluations.costs.estimate import estimate_start
from evaluations.costs.texts import coverage_warning, describe_estimate, estimate_cost
from evaluations.models import DatasetVersion
from evaluations.reads.run_rights import dataset_versions_to_run
from sherlock.core.errors import ActionError
from sherlock.core.forms import offer
from sherlock.core.pickers import Picker

SIDES = ("agent_version", "dataset_version")


def may_start_runs(user):
    """The user may start runs of at least one agent (Builder or Admin, global or on it): the
    pages and the admin offer the form only then; `StartRun` still decides per agent."""
    return Agent.objects.for_user(user, "build").exists()


def startable_agent_versions(user):
    """What the agent version's picker offers (`agent-version-build`) and the form accepts."""
    return AgentVersion.objects.for_user(user, "build").select_related("agent")


def visible_dataset_versions(user):
    """What the dataset version's picker offers (`dataset-version-to-run`) and the form
    accepts: the versions of the datasets the person may see, and of those an agent they build
    is gated on (`evaluations.reads.run_rights`)."""
    return dataset_versions_to_run(user)


class StartRunForm(forms.Form):
    """The sides not `fixed` (the admin action's selected rows fix one), and the repetitions."""

    # Typed and picked from the versions the person may build / see (/pick/), never all listed.
    agent_version = forms.ModelChoiceField(
        AgentVersion.objects.none(),
        label="Agent version",
        widget=Picker("agent-version-build", placeholder="type an agent's slug or name"),
    )
    dataset_version = forms.ModelChoiceField(
        DatasetVersion.objects.none(),
        label="Dataset version",
        widget=Picker("dataset-version-to-run", placeholder="type a dataset's slug or name"),
        help_text="A draft version may be run ad hoc; its results are not comparable with gate "
        "runs.",
    )
    repetitions = forms.IntegerField(min_value=1, max_value=100, initial=1)
    stop_early = forms.BooleanField(
        required=False,
        label="Stop early",
        help_text="Run the cases in a random order and stop once every gate is decided: the "
        "estimate is then the most it can cost.",
    )

    def __init__(self, user, *args, fixed=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user
        self.estimated_key = ""  # what `previews` estimated: the templates post it back
        offer(self, "agent_version", startable_agent_versions(user))
        offer(self, "dataset_version", visible_dataset_versions(user))
        for side in fixed:
            del self.fields[side]

    def key(self, pairs):
        reps, early = self.cleaned_data["repetitions"], int(self.cleaned_data["stop_early"])
        return ";".join(f"{a.pk}:{d.pk}:{reps}:{early}" for a, d in pairs)

    def previews(self, pairs):
        """One row per (agent version, dataset version) to start: the estimate in words, its
        parts, its cost (the known part + "price missing (N calls)", as the run's page will
        show it), the warning that calls without a price will fail the contract's coverage
        gate under the thresholds applied to the agent (`coverage_warning`; one query), and
        the refusal `StartRun.check` would give (None: it may start)."""
        reps = self.cleaned_data["repetitions"]
        rows = []
        for agent_version, dataset_version in pairs:
            estimate = estimate_start(agent_version, dataset_version, reps)
            refusal = None
            try:
                self.action(agent_version, dataset_version).check()
            except ActionError as exc:
                refusal = str(exc)
            if not estimate["trials"] and refusal is None:
                refusal = "the dataset version has no cases"
            rows.append(
                {
                    "agent_version": agent_version,
                    "dataset_version": dataset_version,
                    "estimate": estimate,
                    "text": describe_estimate(estimate),
                    "cost": estimate_cost(estimate),
                    "coverage_warning": coverage_warning(
                        estimate,
                        thresholds_for(agent_version.agent).thresholds.coverage_required,
                    ),
                    "refusal": refusal,
                }
            )
        self.estimated_key = self.key(pairs)
        return rows

    def confirmed(self, pairs):
        """The person confirmed the very choices whose estimate they saw."""
        return self.data.get("estimated") == self.key(pairs)

    def action(self, agent_version, dataset_version):
        return StartRun(
            acting_user=self.user,
            agent_version=agent_version,
            dataset_version=dataset_version,
            repetitions=self.cleaned_data["repetitions"],
            stop_early=self.cleaned_data["stop_early"],
        )
