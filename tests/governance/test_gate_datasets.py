"""Gate datasets fit the agent: an agent is gated only on datasets chosen for
it, a global policy never carries one agent's dataset to another, an agent with none is refused
saying how to choose one and who may, and only an Admin chooses (audited)."""

import pytest

from governance.actions.create_policy import CreatePolicy
from governance.actions.request_publication import RequestPublication
from governance.actions.set_gate_datasets import SetGateDatasets
from governance.models import AuditEntry, GateDataset
from sherlock.core.errors import ActionConflict, ActionDenied
from tests.support import factories
from tests.support.governance import TOOLS_CHECK, make_version, tool_case


@pytest.fixture
def billing(db):
    """A second team's agent and its own dataset, under the same global policy."""
    agent = factories.agent("billing-bot")
    dataset = factories.dataset("billing-qa")
    factories.dataset_version(
        dataset, cases=[tool_case("invoice", "Invoice?")], checks=[TOOLS_CHECK]
    )
    return agent, dataset


def test_a_global_policy_does_not_carry_one_agents_gate_dataset_to_another(policy, author, billing):
    agent, _ = billing
    version = make_version(agent, author, good=True)
    with pytest.raises(ActionConflict) as refused:
        RequestPublication(acting_user=author, agent_version=version).execute()
    assert refused.value.code == "no_gate_datasets"
    message = str(refused.value)
    assert "No gate dataset is chosen for billing-bot" in message
    assert "an Admin chooses one" in message
    assert f"/admin/governance/gatedataset/add/?agent={agent.pk}" in message
    assert "The global policy lists gate-basics" in message  # named as a suggestion only
    assert not version.publish_requests.exists()
    assert AuditEntry.objects.filter(action="governance.request.refused").count() == 1


def test_once_chosen_the_agent_is_gated_on_its_own_dataset_only(
    policy, admin_user, author, billing
):
    agent, dataset = billing
    SetGateDatasets(acting_user=admin_user, agent=agent, datasets=[dataset]).execute()
    version = make_version(agent, author, good=True)
    request = RequestPublication(acting_user=author, agent_version=version).execute()
    assert [run.dataset_version.dataset.slug for run in request.runs.all()] == ["billing-qa"]
    entry = AuditEntry.objects.get(action="governance.gate_datasets.set")
    assert (entry.before, entry.after) == ({"gate_datasets": []}, {"gate_datasets": ["billing-qa"]})


def test_an_agents_own_policy_names_its_gate_datasets(admin_user, author, billing):
    agent, dataset = billing
    CreatePolicy(
        acting_user=admin_user, agent=agent, name="Billing", gate_datasets=[dataset]
    ).execute()
    version = make_version(agent, author, good=True)
    request = RequestPublication(acting_user=author, agent_version=version).execute()
    assert request.runs.get().dataset_version.dataset == dataset


def test_setting_replaces_the_choice_and_dropping_all_refuses_the_next_request(
    policy, admin_user, author, agent, gate_dataset, other_dataset
):
    factories.dataset_version(other_dataset, cases=[tool_case("z", "?")], checks=[TOOLS_CHECK])
    SetGateDatasets(acting_user=admin_user, agent=agent, datasets=[other_dataset]).execute()
    assert list(
        GateDataset.objects.filter(agent=agent).values_list("dataset__slug", flat=True)
    ) == ["other-dataset"]
    SetGateDatasets(acting_user=admin_user, agent=agent, datasets=[]).execute()
    with pytest.raises(ActionConflict) as refused:
        RequestPublication(
            acting_user=author, agent_version=make_version(agent, author, good=True)
        ).execute()
    assert refused.value.code == "no_gate_datasets"


@pytest.mark.parametrize("persona", ["builder", "publisher", "editor", "outsider"])
def test_only_an_admin_chooses_gate_datasets(request, persona, policy, billing):
    agent, dataset = billing
    user = request.getfixturevalue(persona)
    with pytest.raises(ActionDenied) as refused:
        SetGateDatasets(acting_user=user, agent=agent, datasets=[dataset]).execute()
    assert "Only an Admin" in str(refused.value)
    assert not GateDataset.objects.filter(agent=agent).exists()
    assert AuditEntry.objects.filter(action="governance.gate_datasets.refused").count() == 1


def test_the_admin_page_adds_and_drops_through_the_action(client, admin_user, billing, policy):
    agent, dataset = billing
    client.force_login(admin_user)
    page = client.get(f"/admin/governance/gatedataset/add/?agent={agent.pk}")
    assert page.status_code == 200
    saved = client.post(
        "/admin/governance/gatedataset/add/", {"agent": agent.pk, "dataset": dataset.pk}
    )
    assert saved.status_code == 302, saved.content.decode()[:2000]
    row = GateDataset.objects.get(agent=agent)
    assert (row.dataset, row.chosen_by) == (dataset, admin_user)
    client.post(f"/admin/governance/gatedataset/{row.pk}/delete/", {"post": "yes"})
    assert not GateDataset.objects.filter(agent=agent).exists()
    assert AuditEntry.objects.filter(action="governance.gate_datasets.set").count() == 2


def test_a_builder_may_not_add_on_the_admin_page(client, builder, billing):
    agent, dataset = billing
    builder.is_staff = True
    builder.save(update_fields=["is_staff"])
    client.force_login(builder)
    response = client.post(
        "/admin/governance/gatedataset/add/", {"agent": agent.pk, "dataset": dataset.pk}
    )
    assert response.status_code == 403
    assert not GateDataset.objects.exists()


def test_the_admin_list_shows_only_choices_the_user_may_see(client, admin_user, billing):
    """A Builder of billing-bot alone sees its choice of a dataset they may open, not the one
    on a dataset they have no role on, nor any other agent's choices."""
    from tests.support.governance import grant_on

    agent, dataset = billing
    hidden = factories.dataset("billing-secret")
    factories.dataset_version(hidden, cases=[tool_case("x", "X?")], checks=[TOOLS_CHECK])
    other = factories.agent("other-bot")
    SetGateDatasets(acting_user=admin_user, agent=agent, datasets=[dataset, hidden]).execute()
    SetGateDatasets(acting_user=admin_user, agent=other, datasets=[dataset]).execute()
    builder = grant_on(factories.user("billing-builder"), "Builder", agent)
    builder = grant_on(builder, "Editor", dataset)
    client.force_login(builder)
    page = client.get("/admin/governance/gatedataset/").content.decode()
    assert "billing-qa" in page.lower()
    assert "billing-secret" not in page.lower() and "other-bot" not in page.lower()
