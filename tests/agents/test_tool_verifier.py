"""A tool's verifier is checked when it is saved, in the admin as anywhere `full_clean` runs."""

import json

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


def test_the_admin_audits_a_verifier_the_egress_rules_refuse(client):
    """Naming Sherlock's own secret is refused on the field, as any bad verifier, and audited
    as an agent version's refusal is (`agents.tool.refused`): trying is evidence."""
    from governance.models import AuditEntry

    root = factories.user("root", is_superuser=True)
    client.force_login(root)
    form = {"name": "crm.update", "description": "", "arguments_schema": "{}", "effectful": "on"}
    verifier = {
        "kind": "http",
        "url": "https://crm.example.com/x",
        "headers_env": {"X-Key": "SHERLOCK_AUDIT_KEY"},
        "predicate": {"path": "$.ok", "op": "truthy"},
    }

    refused = client.post("/admin/agents/tool/add/", {**form, "verifier": json.dumps(verifier)})

    assert refused.status_code == 200
    errors = refused.context["adminform"].form.errors["verifier"][0]
    assert "SHERLOCK_AUDIT_KEY is Sherlock's own secret" in errors
    assert not Tool.objects.exists()
    entry = AuditEntry.objects.get(action="agents.tool.refused")
    assert entry.actor == root
    assert entry.after == {"verb": "create", "code": "egress_refused", "name": "crm.update"}
    assert entry.reason.startswith("verifier: headers_env.X-Key: SHERLOCK_AUDIT_KEY")


def test_the_admin_does_not_audit_a_verifier_that_is_only_malformed(client):
    from governance.models import AuditEntry

    client.force_login(factories.user("root", is_superuser=True))
    form = {"name": "crm.update", "description": "", "arguments_schema": "{}", "effectful": "on"}

    client.post("/admin/agents/tool/add/", {**form, "verifier": '{"kind": "shell"}'})

    assert not AuditEntry.objects.filter(action__endswith=".refused").exists()
