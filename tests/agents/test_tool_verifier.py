"""A tool's verifier is checked when it is saved, in the admin as anywhere `full_clean` runs."""

import pytest
from django.core.exceptions import ValidationError

from agents.models import Tool
from tests.support import factories

pytestmark = pytest.mark.django_db  # full_clean checks the name is unique

GOOD = {"kind": "python", "callable": "agents.demo.effect_in_ledger"}


@pytest.mark.parametrize(
    ("verifier", "message"),
    [
        ({"kind": "shell", "command": "true"}, "kind"),
        ({"kind": "python", "callable": "os.system"}, "callable"),
        ({"kind": "sql", "database": "default", "query": "SELECT 1"}, "database"),
        ({**GOOD, "predicate": {"path": "x"}}, "predicate.path"),
    ],
)
def test_a_bad_verifier_is_refused_naming_its_field(verifier, message):
    with pytest.raises(ValidationError) as caught:
        Tool(name="crm.update", effectful=True, verifier=verifier).full_clean()
    assert list(caught.value.message_dict) == ["verifier"]
    assert caught.value.message_dict["verifier"][0].startswith(message)


def test_a_good_verifier_or_none_is_accepted():
    Tool(name="crm.update", effectful=True, verifier=GOOD).full_clean()
    Tool(name="kb.search").full_clean()


def test_the_admin_shows_the_error_and_saves_nothing(client):
    client.force_login(factories.user("root", is_superuser=True))
    form = {"name": "crm.update", "description": "", "arguments_schema": "{}", "effectful": "on"}

    refused = client.post(
        "/admin/agents/tool/add/",
        {**form, "verifier": '{"kind": "python", "callable": "os.system"}'},
    )
    assert refused.status_code == 200
    assert "callable" in str(refused.context["adminform"].form.errors["verifier"])
    assert not Tool.objects.exists()

    saved = client.post(
        "/admin/agents/tool/add/",
        {**form, "verifier": '{"kind": "python", "callable": "agents.demo.effect_in_ledger"}'},
    )
    assert saved.status_code == 302
    assert Tool.objects.get().verifier == GOOD
