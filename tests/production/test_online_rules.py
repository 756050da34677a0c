"""Online rules: written by a Builder or an Admin of the agent through the actions (audited,
refusals too), every bad field refused at once on its field, deterministic sampling per trace
id, and attribute filters on the resource and on spans."""

import uuid

import pytest

from governance.models import AuditEntry
from production.actions.create_online_rule import CreateOnlineRule
from production.actions.update_online_rule import UpdateOnlineRule
from production.models import OnlineRule
from production.online.rules import matches, sampled
from sherlock.core.errors import ActionConflict, ActionDenied, InvalidFields
from tests.support import factories

LATENCY = {"label": "fast", "kind": "latency", "params": {"max_ms": 2000}, "threshold": 1.0}


@pytest.fixture
def agent(db):
    return factories.agent("support-bot")


@pytest.mark.parametrize("role", ["Builder", "Admin"])
def test_a_builder_or_an_admin_creates_the_rule_audited(role, agent):
    user = factories.user(f"u-{role}", role=role)
    rule = CreateOnlineRule(
        acting_user=user, agent=agent, sampling_rate=0.25, checks=[LATENCY]
    ).execute()
    assert (rule.sampling_rate, rule.checks[0]["label"], rule.judge_model) == (
        0.25,
        "fast",
        "gpt-4o-mini",
    )
    entry = AuditEntry.objects.get(action="production.online_rule.create")
    assert entry.actor == user and entry.after["sampling_rate"] == 0.25


@pytest.mark.parametrize("role", ["Editor", "Publisher", None])
def test_other_roles_cannot_write_the_rule(role, agent, builder):
    user = factories.user(f"u-{role}", role=role)
    with pytest.raises(ActionDenied):
        CreateOnlineRule(acting_user=user, agent=agent).execute()
    rule = CreateOnlineRule(acting_user=builder, agent=agent).execute()
    with pytest.raises(ActionDenied):
        UpdateOnlineRule(acting_user=user, rule=rule, changes={"active": False}).execute()
    rule.refresh_from_db()
    assert rule.active
    refused = AuditEntry.objects.filter(action="production.online_rule.refused", actor=user)
    assert sorted(e.after["verb"] for e in refused) == ["create", "update"]


def test_a_builder_of_another_agent_may_not(agent):
    from tests.support.governance import grant_on

    other = factories.agent("other-bot")
    user = factories.user("scoped")
    grant_on(user, "Builder", other)
    with pytest.raises(ActionDenied):
        CreateOnlineRule(acting_user=user, agent=agent).execute()
    assert CreateOnlineRule(acting_user=user, agent=other).execute().agent == other


def test_one_rule_per_agent(agent, builder):
    CreateOnlineRule(acting_user=builder, agent=agent).execute()
    with pytest.raises(ActionConflict) as refused:
        CreateOnlineRule(acting_user=builder, agent=agent).execute()
    assert refused.value.code == "exists"


def test_an_update_records_before_and_after(agent, builder, admin_user):
    rule = CreateOnlineRule(acting_user=builder, agent=agent, daily_cap_usd="2.5").execute()
    UpdateOnlineRule(
        acting_user=admin_user, rule=rule, changes={"daily_cap_usd": "0.75", "active": False}
    ).execute()
    rule.refresh_from_db()
    assert (str(rule.daily_cap_usd), rule.active) == ("0.7500", False)
    entry = AuditEntry.objects.get(action="production.online_rule.update")
    assert (entry.before["daily_cap_usd"], entry.after["daily_cap_usd"]) == ("2.5000", "0.7500")


def test_every_bad_field_is_refused_at_once_and_nothing_is_written(agent, builder):
    draft = factories.dataset_version(frozen=False)
    with pytest.raises(InvalidFields) as refused:
        CreateOnlineRule(
            acting_user=builder,
            agent=agent,
            sampling_rate=1.5,
            filters=[{"on": "log", "key": "x", "op": "equals", "value": "y"}],
            checks=[{"label": "x", "kind": "no_such_kind"}],
            library_version=draft.pk,
            daily_cap_usd="-1",
            outcome_check={"kind": "python", "callable": "os.system"},
        ).execute()
    fields = [error.field for error in refused.value.errors]
    assert fields == [
        "sampling_rate",
        "filters",
        "library_version",
        "checks",
        "outcome_check",
        "daily_cap_usd",
    ]
    assert not OnlineRule.objects.exists()
    assert AuditEntry.objects.filter(action="production.online_rule.refused").count() == 0


def test_library_labels_must_name_checks_of_a_frozen_version(agent, builder):
    library = factories.dataset_version(checks=[LATENCY])
    with pytest.raises(InvalidFields) as refused:
        CreateOnlineRule(
            acting_user=builder,
            agent=agent,
            library_version=library.pk,
            library_labels=["fast", "tone"],
            quality_check="nothing",
        ).execute()
    assert [e.field for e in refused.value.errors] == ["library_labels", "quality_check"]
    rule = CreateOnlineRule(
        acting_user=builder, agent=agent, library_version=library.pk, library_labels=["fast"]
    ).execute()
    assert rule.library_version == library


# --- sampling and filters ------------------------------------------------------------------------


def test_sampling_is_deterministic_per_trace_id_and_near_the_rate():
    ids = [uuid.UUID(int=n).hex for n in range(4000)]
    first = [sampled(trace_id, 0.3) for trace_id in ids]
    assert first == [sampled(trace_id, 0.3) for trace_id in ids]
    assert 0.27 < sum(first) / len(ids) < 0.33
    # Raising the rate keeps every trace sampled before.
    assert all(sampled(t, 0.6) for t, was in zip(ids, first, strict=True) if was)
    assert not any(sampled(t, 0) for t in ids[:50]) and all(sampled(t, 1) for t in ids[:50])


def test_filters_on_the_resource_and_on_spans():
    resource = {"service.name": "refund-desk", "deployment.environment": "prod"}
    spans = [{"gen_ai.request.model": "gpt-4o"}, {"gen_ai.tool.name": "refund.issue"}]
    rule = [
        {"on": "resource", "key": "deployment.environment", "op": "equals", "value": "prod"},
        {"on": "span", "key": "gen_ai.tool.name", "op": "contains", "value": "refund"},
    ]
    assert matches(rule, resource, spans)
    assert not matches(rule, {**resource, "deployment.environment": "staging"}, spans)
    assert not matches(rule, resource, spans[:1])
    exists = [{"on": "span", "key": "gen_ai.tool.name", "op": "exists", "value": None}]
    assert matches(exists, {}, spans) and not matches(exists, {}, spans[:1])
    other = [{"on": "resource", "key": "service.name", "op": "not_equals", "value": "x"}]
    assert matches(other, resource, []) and matches(other, {}, [])
