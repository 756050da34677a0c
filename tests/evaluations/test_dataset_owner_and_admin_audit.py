"""Every path that makes a dataset gives it an owner and an `evaluations.dataset.create` entry
(the admin, the API, the trial import's external dataset; the demo seed in test_seed_demo.py),
and the admin's edits of a dataset's name and description, and of model prices, are audited
with before and after."""

from decimal import Decimal

from evaluations.models import Dataset, ModelPrice
from governance.models import AuditEntry
from tests.support import factories
from tests.support.contract_runs import seed_text
from tests.support.governance import api_client


def creation_of(dataset):
    return AuditEntry.objects.get(action="evaluations.dataset.create", target_id=str(dataset.pk))


def test_a_dataset_made_in_the_admin_is_owned_by_its_maker(logged_in, editor):
    response = logged_in(editor).post(
        "/admin/evaluations/dataset/add/", {"slug": "faq", "name": "FAQ", "description": ""}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    dataset = Dataset.objects.get(slug="faq")
    assert dataset.owner == editor
    assert creation_of(dataset).after["owner"] == "editor"


def test_a_dataset_made_through_the_api_is_owned_by_its_maker(editor):
    response = api_client(editor).post(
        "/api/v1/datasets/", {"slug": "faq", "name": "FAQ", "owner": "someone"}, format="json"
    )
    assert response.status_code == 201, response.json()
    dataset = Dataset.objects.get(slug="faq")
    assert dataset.owner == editor and response.json()["owner"] == "editor"
    assert creation_of(dataset).actor_id == editor.pk


def test_the_external_dataset_of_a_trial_import_is_owned_by_the_importer(builder):
    from evaluations.actions.import_trials import ImportTrials

    agent = factories.agent("refund-agent", owner=None)
    version = factories.agent_version(agent)
    run = ImportTrials(
        acting_user=builder, agent_version=version, text=seed_text(), variant="stable v1"
    ).execute()
    dataset = run.dataset_version.dataset
    assert dataset.slug == "external-refund-agent" and dataset.owner == builder
    assert creation_of(dataset).actor_id == builder.pk


def test_a_system_trial_import_gives_its_dataset_the_agents_owner(builder):
    from evaluations.actions.import_trials import ImportTrials

    agent = factories.agent("refund-agent", owner=builder)
    version = factories.agent_version(agent)
    run = ImportTrials(
        acting_user=None, agent_version=version, text=seed_text(), variant="stable v1"
    ).execute()
    dataset = run.dataset_version.dataset
    assert dataset.owner == builder
    entry = creation_of(dataset)
    assert entry.actor_id is None and entry.after["owner"] == "builder"


def test_changing_a_datasets_name_in_the_admin_is_audited_with_before_and_after(logged_in, editor):
    dataset = factories.dataset("faq")
    response = logged_in(editor).post(
        f"/admin/evaluations/dataset/{dataset.pk}/change/",
        {"name": "Frequent questions", "description": "What customers ask"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    entry = AuditEntry.objects.get(action="evaluations.dataset.update")
    assert entry.actor_id == editor.pk and entry.target_id == str(dataset.pk)
    assert entry.before == {"name": "Faq", "description": ""}
    assert entry.after == {"name": "Frequent questions", "description": "What customers ask"}


def test_model_prices_changed_in_the_admin_are_audited(logged_in, admin_user):
    client = logged_in(admin_user)
    fields = {"model": "gpt-x", "usd_per_million_input": "1.5", "usd_per_million_output": "3"}
    client.post("/admin/evaluations/modelprice/add/", fields)
    price = ModelPrice.objects.get(model="gpt-x")
    assert AuditEntry.objects.get(action="evaluations.modelprice.create").after["model"] == "gpt-x"
    client.post(
        f"/admin/evaluations/modelprice/{price.pk}/change/",
        {**fields, "usd_per_million_output": "0.5"},
    )
    entry = AuditEntry.objects.get(action="evaluations.modelprice.update")
    assert entry.before == {"usd_per_million_output": "3.000000"}
    assert Decimal(entry.after["usd_per_million_output"]) == Decimal("0.5")
