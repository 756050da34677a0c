"""Every failed gate names its cause and its fix, on every surface (the run page, the publish
page, `manage.py evaluate`, the verdict API): an agent that calls a tool nobody registered
fails the unknown-effects gate, and each surface names that tool and how to register it, who
may, with a link to the docs' section that the served docs really have."""

import re
from io import StringIO

import pytest
from django.core.management import call_command

from agents.models import Tool
from evaluations.models import Run
from governance.actions.request_publication import RequestPublication
from governance.models import GateDataset, PublishingPolicy
from tests.support import factories
from tests.support.governance import api_client

HERE = "tests.test_gate_fixes"
SHAPE = {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}


def billing_agent(case, **_):
    """Answers, bills, and calls `billing.lookup`, which nobody registered, and `crm.note`,
    registered as effectful without a verifier."""
    return {
        "output": f"Your balance, {case['input']['who']}, is $0.",
        "cost_usd": 0.01,
        "tool_calls": [
            {"id": "b1", "name": "billing.lookup", "arguments": {"who": case["input"]["who"]}},
            {"id": "c1", "name": "crm.note", "arguments": {"text": "asked"}},
        ],
    }


def evaluate(*args):
    out = StringIO()
    try:
        call_command("evaluate", *args, stdout=out)
    except SystemExit as exit_:
        return exit_.code, out.getvalue()
    return 0, out.getvalue()


@pytest.fixture
def world(live_db, builder, admin_user):
    Tool.objects.create(name="crm.note", effectful=True)
    agent = factories.agent("billing-bot")
    factories.agent_version(agent, callable_path=f"{HERE}.billing_agent")
    dataset_version = factories.dataset_version(
        factories.dataset("balances"),
        cases=[("ann", {"who": "ann"}, {}), ("bob", {"who": "bob"}, {})],
        checks=[SHAPE],
    )
    policy = PublishingPolicy.objects.create(
        name="Billing", agent=agent, version=1, repetitions=1, created_by=admin_user
    )
    policy.gate_datasets.add(dataset_version.dataset)
    GateDataset.objects.create(agent=agent, dataset=dataset_version.dataset)
    return agent, dataset_version


def test_an_unregistered_tool_is_named_with_how_to_register_it_on_every_surface(
    world, builder, client
):
    agent, dataset_version = world
    code, out = evaluate(agent.slug, "--dataset", dataset_version.dataset.slug, "--user", "builder")
    assert code == 1, out
    run = Run.objects.latest("pk")

    # The verdict API: the reason, its fix and a docs link.
    body = api_client(builder).get(f"/api/v1/runs/{run.pk}/verdict/").json()
    (reason,) = [r for r in body["reasons"] if r["code"] == "unknown_effects"]
    assert "billing.lookup (not registered, 2 call(s))" in reason["fix"]
    assert "crm.note (no verifier, 2 call(s))" in reason["fix"]
    assert f"register 'billing.lookup' as {agent.slug}'s tools with a verifier" in reason["fix"]
    assert "give 'crm.note' a verifier" in reason["fix"]
    register = f"/admin/agents/tool/add/?name=billing.lookup&agent={agent.pk}"
    assert f"a Builder of the agent registers them: {register}" in reason["fix"]
    assert reason["docs"].endswith("/docs/contract/#unknown-effects")

    # The docs link lands on a heading the served page has.
    client.force_login(builder)
    docs = client.get(reason["docs"].split("#")[0]).content.decode()
    assert 'id="unknown-effects"' in docs

    # `manage.py evaluate` prints it after the result.
    assert "to fix unknown_effects: Unknown effects are tool calls" in out
    assert "billing.lookup (not registered" in out

    # The run page lists it under the verdict, linked.
    html = client.get(f"/runs/{run.pk}/").content.decode()
    fixes = re.search(r'<ul id="gate-fixes">(.*?)</ul>', html, re.S).group(1)
    assert 'data-code="unknown_effects"' in fixes and "billing.lookup" in fixes
    assert "<b>unknown effects</b>" in fixes and "#unknown-effects" in fixes
    # The form that registers the tool is one click away, filled in for this agent.
    link = f'<a href="/admin/agents/tool/add/?name=billing.lookup&amp;agent={agent.pk}">'
    assert link in fixes
    form = client.get(f"/admin/agents/tool/add/?name=billing.lookup&agent={agent.pk}")
    assert form.status_code == 200 and 'value="billing.lookup"' in form.content.decode()


def test_the_publish_page_names_the_same_fix(
    world, builder, client, django_capture_on_commit_callbacks
):
    agent, _ = world
    version = agent.versions.get()
    with django_capture_on_commit_callbacks(execute=True):
        request = RequestPublication(acting_user=builder, agent_version=version).execute()
    request.refresh_from_db()
    assert request.decision["verdict"]["outcome"] == "failed", request.decision["verdict"]
    client.force_login(builder)
    html = client.get(f"/governance/versions/{version.pk}/").content.decode()
    fixes = re.search(r'<ul id="gate-fixes">(.*?)</ul>', html, re.S).group(1)
    assert f"register &#x27;billing.lookup&#x27; as {agent.slug}&#x27;s tools" in fixes
    assert f'href="/admin/agents/tool/add/?name=billing.lookup&amp;agent={agent.pk}"' in fixes
    assert "#unknown-effects" in fixes


def test_naming_the_tools_costs_one_query_for_any_number_of_runs(world, builder):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from evaluations.verdict import verdicts_of

    agent, dataset_version = world
    for _ in range(3):
        evaluate(agent.slug, "--dataset", dataset_version.dataset.slug, "--user", "builder")
    runs = list(Run.objects.select_related("agent_version__agent").order_by("pk"))

    def queries(some):
        with CaptureQueriesContext(connection) as seen:
            found = verdicts_of(some)
        assert all(any("billing.lookup" in r.fix for r in v.reasons) for v in found.values())
        return len(seen)

    assert queries(runs[:1]) == queries(runs)
