"""`GET/PUT /api/v1/agents/{slug}/gate-datasets/`: whoever may see an agent reads which datasets
gate it (the Admin's choice, and what its next publish request runs); only a global Admin sets
them, through `SetGateDatasets` (audited); anyone else is 403 before the body is read, and a
bad body is a 400 naming the field that changes nothing."""

import pytest

from governance.actions.create_policy import CreatePolicy
from governance.models import AuditEntry, GateDataset
from tests.support import factories
from tests.support.governance import grant_on

URL = "/api/v1/agents/billing-bot/gate-datasets/"


@pytest.fixture
def billing(db):
    agent = factories.agent("billing-bot")
    factories.dataset_version(factories.dataset("billing-qa"), cases=[("a", "q", {})])
    factories.dataset_version(factories.dataset("billing-edge"), cases=[("b", "q", {})])
    return agent


def chosen(agent):
    return list(GateDataset.objects.filter(agent=agent).values_list("dataset__slug", flat=True))


def test_an_admin_sets_them_through_the_action_and_reads_them_back(admin_user, billing):
    api = factories.api(admin_user)
    empty = api.get(URL)
    assert empty.status_code == 200
    assert empty.json() == {
        "agent": "billing-bot",
        "datasets": [],
        "chosen": [],
        "gated_on": [],
        "hidden": 0,
        "source": "none",
    }
    put = api.put(URL, {"datasets": ["billing-qa", "billing-edge"]}, format="json")
    assert put.status_code == 200, put.json()
    body = put.json()
    assert body["datasets"] == ["billing-edge", "billing-qa"] == body["gated_on"]
    assert body["source"] == "chosen"
    assert [row["chosen_by"] for row in body["chosen"]] == ["admin", "admin"]
    assert api.get(URL).json() == body
    assert sorted(chosen(billing)) == ["billing-edge", "billing-qa"]
    entry = AuditEntry.objects.get(action="governance.gate_datasets.set")
    assert entry.after == {"gate_datasets": ["billing-edge", "billing-qa"]}
    assert entry.actor == admin_user and entry.target_id == str(billing.pk)

    dropped = api.put(URL, {"datasets": []}, format="json")
    assert dropped.status_code == 200 and dropped.json()["source"] == "none"
    assert chosen(billing) == []


def test_the_agents_own_policy_is_what_the_next_request_runs(admin_user, billing):
    from evaluations.models import Dataset

    api = factories.api(admin_user)
    api.put(URL, {"datasets": ["billing-qa"]}, format="json")
    CreatePolicy(
        acting_user=admin_user,
        agent=billing,
        name="Billing",
        gate_datasets=[Dataset.objects.get(slug="billing-edge")],
    ).execute()
    body = api.get(URL).json()
    assert body["datasets"] == ["billing-qa"]  # the choice is kept ...
    assert (body["gated_on"], body["source"]) == (["billing-edge"], "agent_policy")  # ... unused


@pytest.mark.parametrize(
    "payload,field",
    [
        ({"datasets": ["billing-qa", "no-such-dataset"]}, "datasets"),
        ({"datasets": "billing-qa"}, "datasets"),
        ({}, "datasets"),
        ({"datasets": ["billing-qa"], "dataset": "typo"}, "dataset"),
    ],
)
def test_a_bad_body_is_a_400_naming_the_field_and_changes_nothing(
    admin_user, billing, payload, field
):
    api = factories.api(admin_user)
    api.put(URL, {"datasets": ["billing-edge"]}, format="json")
    answer = api.put(URL, payload, format="json")
    assert answer.status_code == 400, answer.json()
    assert answer.json()["field"] == field and answer.json()["code"]
    assert "no-such-dataset" not in answer.json()["detail"]  # input is never echoed
    assert chosen(billing) == ["billing-edge"]
    assert AuditEntry.objects.filter(action="governance.gate_datasets.set").count() == 1


@pytest.mark.parametrize(
    "persona,reads,sets",
    [
        ("admin_user", 200, 200),
        ("builder", 200, 403),
        ("publisher", 200, 403),
        ("editor", 200, 403),
        ("agent_admin", 200, 403),  # an Admin of this agent only: the rules are global
        ("agent_builder", 200, 403),
        ("outsider", 404, 404),  # may not see the agent: nothing about it, not even a 403
    ],
)
def test_who_reads_and_who_sets(request, billing, persona, reads, sets):
    if persona == "agent_admin":
        user = grant_on(factories.user("agent-admin"), "Admin", billing)
    elif persona == "agent_builder":
        user = grant_on(factories.user("agent-builder"), "Builder", billing)
    else:
        user = request.getfixturevalue(persona)
    api = factories.api(user)
    assert api.get(URL).status_code == reads
    # A body that would fail validation: the role is answered first (403), so a refused user
    # learns nothing about which slugs exist.
    answer = api.put(URL, {"datasets": ["no-such-dataset"]}, format="json")
    expected = 400 if sets == 200 else sets
    assert answer.status_code == expected, answer.json()
    valid = api.put(URL, {"datasets": ["billing-qa"]}, format="json")
    assert valid.status_code == sets, valid.json()
    if sets == 403:
        assert "Only an Admin" in valid.json()["detail"]
        assert chosen(billing) == []
        assert AuditEntry.objects.filter(action="governance.gate_datasets.refused").count() == 2
    elif sets == 200:
        assert chosen(billing) == ["billing-qa"]
    else:
        assert chosen(billing) == []


def test_whoever_may_see_the_agent_reads_its_gate_datasets_names(admin_user, billing):
    """One rule names a dataset on every surface: a Builder of the agent reads the names of
    both its gate datasets, with a role on one of them or none, as the agent's runs, its publish
    page and the run picker name them to him."""
    from evaluations.models import Dataset

    factories.api(admin_user).put(URL, {"datasets": ["billing-qa", "billing-edge"]}, format="json")
    builder = grant_on(factories.user("agent-builder"), "Builder", billing)
    builder = grant_on(builder, "Editor", Dataset.objects.get(slug="billing-qa"))
    body = factories.api(builder).get(URL).json()
    assert body["datasets"] == ["billing-edge", "billing-qa"] == body["gated_on"]
    assert body["hidden"] == 0
    qa = Dataset.objects.get(slug="billing-qa")
    stranger = grant_on(factories.user("stranger"), "Editor", qa)
    assert factories.api(stranger).get(URL).status_code == 404  # the agent is not theirs


def test_an_unknown_agent_is_a_404_in_the_error_shape(admin_user, db):
    answer = factories.api(admin_user).get("/api/v1/agents/no-such-bot/gate-datasets/")
    assert answer.status_code == 404 and answer.json()["code"]


def test_reading_costs_the_same_queries_whatever_the_number_chosen(
    admin_user, billing, django_assert_max_num_queries
):
    from evaluations.models import Dataset
    from governance.actions.set_gate_datasets import SetGateDatasets

    api = factories.api(admin_user)
    SetGateDatasets(
        acting_user=admin_user, agent=billing, datasets=list(Dataset.objects.all())
    ).execute()
    with django_assert_max_num_queries(12) as few:
        assert len(api.get(URL).json()["chosen"]) == 2
    for n in range(6):
        factories.dataset_version(factories.dataset(f"more-{n}"), cases=[("c", "q", {})])
    SetGateDatasets(
        acting_user=admin_user, agent=billing, datasets=list(Dataset.objects.all())
    ).execute()
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert len(api.get(URL).json()["chosen"]) == 8
