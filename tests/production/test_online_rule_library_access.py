"""Who may pick which dataset's checks for an online rule (`library_version`): a Builder or an
Admin of the agent, and only a frozen version of a dataset they may see. A version they may not
see is answered as one that does not exist (400 on the field, the same message and code), and
the attempt is audited; the rule's own version is kept when its other fields change. Through
the action, the page and the API; the page's select lists only what the user may see, in a
constant number of queries."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from governance.models import AuditEntry
from production.actions.create_online_rule import CreateOnlineRule
from production.actions.update_online_rule import UpdateOnlineRule
from production.models import OnlineRule
from sherlock.core.errors import ActionDenied, InvalidFields
from tests.support import factories
from tests.support.governance import api_client, grant_on

LATENCY = {"label": "fast", "kind": "latency", "params": {"max_ms": 2000}, "threshold": 1.0}
RULE = "/api/v1/agents/{}/online-rule/"
FORM = {
    "active": "on",
    "sampling_rate": "1",
    "filters": "",
    "library_version": "",
    "library_labels": "",
    "checks": "",
    "quality_check": "",
    "outcome_check": "",
    "verify_effects": "on",
    "judge_model": "",
    "daily_cap_usd": "2",
}
MISSING = 987654
NOT_SEEN = "no such dataset version, or one you may not see"


@pytest.fixture
def agent(db):
    return factories.agent("support-bot")


@pytest.fixture
def secret(db):
    """A frozen version of a dataset on which the agent's Builder has no role."""
    return factories.dataset_version(factories.dataset("secret-evals"), checks=[LATENCY])


@pytest.fixture
def shared(db):
    return factories.dataset_version(factories.dataset("shared-evals"), checks=[LATENCY])


@pytest.fixture
def builder_here(agent, shared):
    """A Builder of the agent and an Editor of `shared` only."""
    user = factories.user("builder-here")
    grant_on(user, "Builder", agent)
    return grant_on(user, "Editor", shared.dataset)


@pytest.fixture
def builder_of_both(agent, secret):
    user = factories.user("builder-both")
    grant_on(user, "Builder", agent)
    return grant_on(user, "Editor", secret.dataset)


@pytest.fixture
def editor_of_dataset(secret):
    """An Editor of the dataset, with no role on the agent."""
    return grant_on(factories.user("editor-only"), "Editor", secret.dataset)


@pytest.fixture
def admin(db):
    return factories.user("global-admin", role="Admin")


def hidden_refusals():
    return AuditEntry.objects.filter(action="production.online_rule.refused")


# --- the action --------------------------------------------------------------------------------


def test_a_builder_without_a_role_on_the_dataset_is_answered_as_if_it_did_not_exist(
    agent, builder_here, secret
):
    answers = []
    for value in (secret.pk, MISSING):
        with pytest.raises(InvalidFields) as refused:
            CreateOnlineRule(acting_user=builder_here, agent=agent, library_version=value).execute()
        answers.append([(e.field, str(e), e.code) for e in refused.value.errors])
    assert answers[0] == answers[1] == [("library_version", NOT_SEEN, "does_not_exist")]
    assert not OnlineRule.objects.exists()
    # Only the hidden one is evidence of an attempt: audited, naming it, for the Admins.
    entry = hidden_refusals().get()
    assert entry.actor == builder_here and entry.after == {"verb": "create", "code": "not_found"}
    assert f"dataset version {secret.pk} (secret-evals v1)" in entry.reason


def test_a_builder_with_a_role_on_the_dataset_picks_its_checks(agent, builder_of_both, secret):
    rule = CreateOnlineRule(
        acting_user=builder_of_both, agent=agent, library_version=secret.pk
    ).execute()
    assert rule.library_version == secret
    assert not hidden_refusals().exists()


def test_an_editor_of_the_dataset_without_a_builder_role_may_not_write_the_rule(
    agent, editor_of_dataset, secret
):
    with pytest.raises(ActionDenied):
        CreateOnlineRule(
            acting_user=editor_of_dataset, agent=agent, library_version=secret.pk
        ).execute()
    assert not OnlineRule.objects.exists()
    assert hidden_refusals().get().after["code"] == "permission_denied"


def test_a_global_admin_picks_any_datasets_checks(agent, admin, secret):
    rule = CreateOnlineRule(acting_user=admin, agent=agent, library_version=secret.pk).execute()
    assert rule.library_version == secret


def test_an_update_refuses_a_hidden_version_and_keeps_the_rule(agent, builder_here, secret):
    rule = CreateOnlineRule(acting_user=builder_here, agent=agent).execute()
    with pytest.raises(InvalidFields) as refused:
        UpdateOnlineRule(
            acting_user=builder_here, rule=rule, changes={"library_version": secret.pk}
        ).execute()
    assert refused.value.field == "library_version"
    rule.refresh_from_db()
    assert rule.library_version is None
    assert hidden_refusals().get().after["verb"] == "update"


def test_keeping_the_version_an_admin_set_is_not_picking_it(agent, admin, builder_here, secret):
    rule = CreateOnlineRule(acting_user=admin, agent=agent, library_version=secret.pk).execute()
    UpdateOnlineRule(
        acting_user=builder_here,
        rule=rule,
        changes={"library_version": secret.pk, "daily_cap_usd": "4"},
    ).execute()
    rule.refresh_from_db()
    assert (rule.library_version, str(rule.daily_cap_usd)) == (secret, "4.0000")
    assert not hidden_refusals().exists()


# --- the page ----------------------------------------------------------------------------------


def page(agent):
    return reverse("production:online-rule", kwargs={"slug": agent.slug})


def options(answer):
    """The (value, text) options the page renders in the version's picker: the empty one and
    the chosen one, never the versions to choose from."""
    field = answer.context["form"]["library_version"]
    return {str(option.data["value"]): option.data["label"] for option in field}


def picks(client, term=""):
    """The frozen versions the picker offers the signed-in person (text by value)."""
    answer = client.get(
        reverse("pick", args=["dataset-version"]), {"state": "frozen", "term": term}
    )
    assert answer.status_code == 200
    return {str(row["id"]): row["text"] for row in answer.json()["results"]}


def test_the_picker_offers_only_the_versions_the_builder_may_see(
    client, agent, builder_here, secret, shared
):
    factories.dataset_version(factories.dataset("draft-only"), frozen=False)
    client.force_login(builder_here)
    answer = client.get(page(agent))
    assert options(answer) == {"": "none"}  # nothing listed on the page
    assert b"secret-evals" not in answer.content
    assert set(picks(client)) == {str(shared.pk)}
    assert picks(client, "secret") == {}


def test_the_page_refuses_a_hidden_version_on_its_field_as_a_missing_one(
    client, agent, builder_here, secret
):
    client.force_login(builder_here)
    bodies = []
    for value in (secret.pk, MISSING):
        answer = client.post(page(agent), {**FORM, "library_version": str(value)})
        assert answer.status_code == 400
        bodies.append(answer.context["form"].errors["library_version"])
        assert b"secret-evals" not in answer.content and options(answer) == {"": "none"}
    assert bodies[0] == bodies[1] == [NOT_SEEN]
    assert not OnlineRule.objects.exists()
    assert hidden_refusals().count() == 1


def test_a_submit_whose_other_fields_do_not_parse_still_records_the_hidden_attempt(
    client, agent, builder_here, secret
):
    client.force_login(builder_here)
    answer = client.post(
        page(agent), {**FORM, "filters": "{not json", "library_version": str(secret.pk)}
    )
    assert answer.status_code == 400
    errors = answer.context["form"].errors
    assert errors["library_version"] == [NOT_SEEN] and "filters" in errors
    assert hidden_refusals().count() == 1
    assert not OnlineRule.objects.exists()


def test_a_refused_submit_keeps_the_visible_version_it_picked(client, agent, builder_here, shared):
    client.force_login(builder_here)
    answer = client.post(
        page(agent), {**FORM, "filters": "{not json", "library_version": str(shared.pk)}
    )
    assert answer.status_code == 400 and "filters" in answer.context["form"].errors
    assert options(answer) == {"": "none", str(shared.pk): "shared-evals v1"}


def test_the_page_saves_a_version_of_a_dataset_the_builder_may_see(
    client, agent, builder_of_both, secret
):
    client.force_login(builder_of_both)
    assert str(secret.pk) in picks(client)
    answer = client.post(page(agent), {**FORM, "library_version": str(secret.pk)})
    assert answer.status_code == 302
    assert OnlineRule.objects.get(agent=agent).library_version == secret


def test_an_editor_of_the_dataset_does_not_see_the_agents_rule_page(
    client, agent, editor_of_dataset, secret
):
    client.force_login(editor_of_dataset)
    assert client.get(page(agent)).status_code == 404
    answer = client.post(page(agent), {**FORM, "library_version": str(secret.pk)})
    assert answer.status_code == 404 and not OnlineRule.objects.exists()


def test_a_global_admin_sees_and_saves_every_frozen_version(client, agent, admin, secret, shared):
    client.force_login(admin)
    assert set(picks(client)) == {str(secret.pk), str(shared.pk)}
    answer = client.post(page(agent), {**FORM, "library_version": str(secret.pk)})
    assert answer.status_code == 302


def test_the_rules_own_hidden_version_stays_selected_and_is_kept_on_save(
    client, agent, admin, builder_here, secret, shared
):
    CreateOnlineRule(acting_user=admin, agent=agent, library_version=secret.pk).execute()
    client.force_login(builder_here)
    answer = client.get(page(agent))
    assert options(answer) == {"": "none", str(secret.pk): "secret-evals v1"}  # chosen, kept
    assert answer.context["form"].initial["library_version"] == str(secret.pk)
    assert str(secret.pk) not in picks(client)  # but not offered to pick
    saved = client.post(
        page(agent), {**FORM, "library_version": str(secret.pk), "daily_cap_usd": "5"}
    )
    assert saved.status_code == 302
    rule = OnlineRule.objects.get(agent=agent)
    assert (rule.library_version, str(rule.daily_cap_usd)) == (secret, "5.0000")


def test_the_page_keeps_its_query_count_as_the_versions_grow(client, agent, builder_here):
    client.force_login(builder_here)

    def add_datasets(start, count):
        for n in range(start, start + count):
            seen = factories.dataset_version(factories.dataset(f"seen-{n}"), checks=[LATENCY])
            grant_on(builder_here, "Editor", seen.dataset)
            factories.dataset_version(factories.dataset(f"hidden-{n}"), checks=[LATENCY])

    def measure():
        client.get(page(agent))  # caches warmed (sessions, content types)
        with CaptureQueriesContext(connection) as queries:
            answer = client.get(page(agent))
        assert answer.status_code == 200
        return len(queries), len(options(answer)), len(picks(client))

    add_datasets(0, 2)
    small = measure()
    add_datasets(2, 6)
    large = measure()
    assert (small[1], large[1]) == (1, 1)  # "none": the page lists no versions
    assert (small[2], large[2]) == (1 + 2, 1 + 8)  # the picker offers shared-evals, the seen ones
    assert large[0] == small[0], (small, large)


# --- the API -----------------------------------------------------------------------------------


def test_the_api_answers_a_hidden_version_as_a_missing_one(agent, builder_here, secret):
    client = api_client(builder_here)
    bodies = [
        client.put(RULE.format(agent.slug), {"library_version": value}, format="json")
        for value in (secret.pk, MISSING)
    ]
    assert [b.status_code for b in bodies] == [400, 400]
    assert bodies[0].json() == bodies[1].json()
    body = bodies[0].json()
    assert (body["field"], body["code"]) == ("library_version", "does_not_exist")
    assert "secret-evals" not in bodies[0].content.decode()
    assert not OnlineRule.objects.exists()
    assert hidden_refusals().count() == 1


@pytest.mark.parametrize(
    ("persona", "status"),
    [("builder_of_both", 201), ("admin", 201), ("editor_of_dataset", 404)],
)
def test_the_api_role_matrix(request, agent, secret, persona, status):
    user = request.getfixturevalue(persona)
    answer = api_client(user).put(
        RULE.format(agent.slug), {"library_version": secret.pk}, format="json"
    )
    assert answer.status_code == status, answer.content
    assert OnlineRule.objects.filter(agent=agent, library_version=secret).exists() == (
        status == 201
    )
