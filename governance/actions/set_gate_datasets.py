"""SetGateDatasets: an Admin chooses the datasets an agent's versions are gated on."""

from governance.actions.base import GovernanceAction
from governance.models import GateDataset
from governance.people.roles import is_global_admin
from sherlock.core.errors import ActionDenied


class SetGateDatasets(GovernanceAction):
    """Make `datasets` the gate datasets chosen for `agent` (adding and dropping rows), audited
    with the slugs before and after. Only a global Admin, as for publishing policies: which
    datasets gate a release is part of the rules, not of the agent's own work. A request
    already evaluating keeps its runs; the next request uses the new choice."""

    noun = "gate_datasets"
    verb = "set"

    def __init__(self, *, acting_user, agent, datasets):
        super().__init__(acting_user=acting_user)
        self.agent = agent
        self.datasets = list(dict.fromkeys(datasets))

    def refusal_target(self):
        return self.agent

    def check_role(self):
        if not is_global_admin(self.acting_user):
            raise ActionDenied("Only an Admin may choose an agent's gate datasets.")

    def check(self):
        self.check_role()

    def perform(self):
        rows = GateDataset.objects.filter(agent=self.agent).select_related("dataset")
        before = sorted(row.dataset.slug for row in rows)
        wanted = {dataset.pk for dataset in self.datasets}
        GateDataset.objects.filter(agent=self.agent).exclude(dataset_id__in=wanted).delete()
        have = set(
            GateDataset.objects.filter(agent=self.agent).values_list("dataset_id", flat=True)
        )
        GateDataset.objects.bulk_create(
            GateDataset(agent=self.agent, dataset=dataset, chosen_by=self.acting_user)
            for dataset in self.datasets
            if dataset.pk not in have
        )
        after = sorted(dataset.slug for dataset in self.datasets)
        self.audit(
            target=self.agent,
            before={"gate_datasets": before},
            after={"gate_datasets": after},
        )
        return after
