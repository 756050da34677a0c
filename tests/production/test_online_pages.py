"""The pages of online scoring: the production page (windows beside the gate, the cap's
state, the lag, the proposal with its verbs for a Publisher only), the rule's editor (every
bad field on its field, input kept, 400; refused roles see why), and the index."""

import pytest
from django.urls import reverse
from django.utils import timezone

from governance.models import PublishingPolicy
from production.choices import ProposalState
from production.models import OnlineRule, OnlineSpend, RollbackProposal
from production.online import scoring
from production.online.spend import day_now
from tests.support import factories, online
from tests.support.governance import REASON, TOOLS_CHECK, tool_case

CHECK = '[{"label": "shape", "kind": "output_type", "params": {"type": "text"}}]'
FORM = {
    "active": "on",
    "sampling_rate": "1",
    "filters": "",
    "library_version": "",
    "library_labels": "",
    "checks": CHECK,
    "quality_check": "",
    "outcome_check": "",
    "verify_effects": "on",
    "judge_model": "",
    "daily_cap_usd": "2",
}


@pytest.fixture
def live(db, admin_user, publisher):
    gate = factories.dataset("gate-basics")
    factories.dataset_version(gate, cases=[tool_case("a", "?")], checks=[TOOLS_CHECK])
    PublishingPolicy.objects.create(name="Default", created_by=admin_user).gate_datasets.add(gate)
    agent = factories.agent("refund-agent")
    author = factories.user("author", role="Builder")
    previous, version = online.live_after(agent, author, publisher)
    return agent, previous, version


def test_a_builder_creates_the_rule_on_its_page(client, builder, live, password):
    agent = live[0]
    client.force_login(builder)
    url = reverse("production:online-rule", kwargs={"slug": agent.slug})
    assert client.get(url).status_code == 200
    answer = client.post(url, FORM)
    assert answer.status_code == 302
    assert OnlineRule.objects.get(agent=agent).checks[0]["label"] == "shape"
    page = client.get(answer.url)
    assert b"Online rule saved" in page.content and b"judge (pinned)" in page.content


def test_bad_fields_come_back_on_their_fields_with_the_input(client, builder, live):
    client.force_login(builder)
    url = reverse("production:online-rule", kwargs={"slug": live[0].slug})
    answer = client.post(url, {**FORM, "sampling_rate": "2", "checks": "[{oops"})
    assert answer.status_code == 400
    form = answer.context["form"]
    # Every error at once: the JSON that does not parse and the rate out of range.
    assert set(form.errors) == {"checks", "sampling_rate"}
    assert "must be a number from 0 to 1" in answer.content.decode()
    answer = client.post(url, {**FORM, "sampling_rate": "2", "daily_cap_usd": "-3"})
    assert answer.status_code == 400
    assert set(answer.context["form"].errors) == {"sampling_rate", "daily_cap_usd"}
    assert b"-3" in answer.content and not OnlineRule.objects.exists()


def test_a_publisher_sees_why_they_may_not_change_the_rule(client, publisher, live):
    client.force_login(publisher)
    url = reverse("production:online-rule", kwargs={"slug": live[0].slug})
    assert b"Builder or Admin role needed" in client.get(url).content
    assert client.post(url, FORM).status_code == 403
    assert not OnlineRule.objects.exists()


def test_the_production_page_shows_windows_the_gate_the_cap_and_the_lag(client, builder, live):
    agent, _, version = live
    client.force_login(builder)
    client.post(
        reverse("production:online-rule", kwargs={"slug": agent.slug}),
        {**FORM, "daily_cap_usd": "1500"},
    )
    scoring.score_traces([online.trace(agent, version, {"output": "hi"}).pk])
    # The day's spend as the cap leaves it once reached (spend.reserve's refusals).
    OnlineSpend.objects.create(
        rule=OnlineRule.objects.get(), day=day_now(), capped_at=timezone.now(), capped_traces=3
    )
    page = client.get(reverse("production:agent", kwargs={"slug": agent.slug}))
    text = page.content.decode()
    assert "production, last 24 h" in text and "production, last 7 d" in text
    assert "gate runs" in text and "Scoring stopped at" in text and "3 traces left unscored" in text
    assert "p95" in text
    # Money from the one formatter (sherlock.core.money), thousands grouped.
    assert "of a $1,500.00 cap" in text and "spend cap of $1,500.00 was reached" in text
    # The table's heads say each figure's unit, as the run page's do.
    assert "<th>cost per trial</th>" in text and "cost/run" not in text


def test_a_publisher_dismisses_on_the_page_and_a_builder_sees_no_verbs(
    client, builder, publisher, live
):
    agent, previous, version = live
    proposal = RollbackProposal.objects.create(
        agent=agent, from_version=version, to_version=previous, breach={"detail": "too many"}
    )
    client.force_login(builder)
    page = client.get(reverse("production:agent", kwargs={"slug": agent.slug}))
    assert b"Rollback proposed" in page.content and b"Dismiss:" not in page.content
    client.force_login(publisher)
    url = reverse("production:proposal-verb", kwargs={"pk": proposal.pk, "verb": "dismiss"})
    thin = client.post(url, {"reason": "meh"})
    assert thin.status_code == 400 and b"at least 30 characters" in thin.content
    assert client.post(url, {"reason": REASON}).status_code == 302
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.DISMISSED


def test_the_index_lists_agents_with_rule_and_proposal(client, builder, live):
    client.force_login(builder)
    page = client.get(reverse("production:index"))
    assert page.status_code == 200 and b"refund-agent" in page.content


def test_a_trace_page_shows_its_online_scores(client, builder, live):
    agent, _, version = live
    client.force_login(builder)
    client.post(reverse("production:online-rule", kwargs={"slug": agent.slug}), FORM)
    row = online.trace(agent, version, {"input": "hi", "output": "hello"})
    url = reverse("production:trace-detail", kwargs={"pk": row.pk})
    assert b"No online rule has scored this trace." in client.get(url).content
    scoring.score_traces([row.pk])
    text = client.get(url).content.decode()
    assert 'id="trace-checks"' in text and "shape" in text and "scored" in text
