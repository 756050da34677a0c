"""The publish page: the gate checklist with every gate, and only the buttons the user may use,
each calling the same action as the API and the admin; publishing, retiring and asking again
are confirmed first, with what they rely on and cost; a refused form keeps what was typed and
says why under its field."""

import re

import pytest

from agents.choices import VersionState
from governance.choices import BypassState, RequestState
from governance.models import AuditEntry, GateDataset
from tests.support import factories
from tests.support.governance import REASON, TOOLS_CHECK, tool_case


def page(client, user, version, **headers):
    client.force_login(user)
    return client.get(f"/governance/versions/{version.pk}/", **headers)


def test_the_page_shows_every_gate_of_a_blocked_decision(client, builder, blocked_request):
    body = page(client, builder, blocked_request.agent_version).content.decode()
    for gate in ("coverage", "false success", "budget", "case pass rate"):
        assert f"<td>{gate}</td>" in body
    assert "first failing gate: <strong>false success</strong>" in body
    assert "was blocked at false success" in body and "blocked at false_success" not in body


@pytest.mark.parametrize(
    "who,shown,hidden",
    [
        ("publisher", ["<button>Publish…</button>"], ["Request bypass", "Request publication"]),
        ("admin_user", ["Request bypass"], []),
        ("builder", [], ["<button>Publish…</button>", "Request bypass"]),
    ],
)
def test_only_the_buttons_a_user_may_use_are_shown(
    who, shown, hidden, request, client, passed_request, blocked_request
):
    version = (passed_request if who != "admin_user" else blocked_request).agent_version
    body = page(client, request.getfixturevalue(who), version).content.decode()
    assert all(text in body for text in shown)
    assert not any(text in body for text in hidden)


def confirm_key(body):
    """The `confirmed` key of the confirmation the page shows."""
    return re.search(r'name="confirmed" value="([^"]*)"', body).group(1)


def test_publishing_from_the_page_calls_the_publish_action(client, publisher, passed_request):
    version = passed_request.agent_version
    client.force_login(publisher)
    url = f"/governance/versions/{version.pk}/publish/"
    first = client.post(url, {"reason": "looks good"}).content.decode()
    assert f"The gate passed: request #{passed_request.pk}." in first  # not "It gate passed, ..."
    assert "It gate" not in first
    response = client.post(url, {"reason": "looks good", "confirmed": confirm_key(first)})
    assert response.status_code == 302
    version.refresh_from_db()
    assert version.state == VersionState.PUBLISHED
    page_after = client.get(response["Location"]).content.decode()
    assert page_after.count(f"{version}: published.") == 1  # the page's message, not also base's


def test_a_refusal_on_the_page_is_shown_and_changes_nothing(client, publisher, blocked_request):
    version = blocked_request.agent_version
    client.force_login(publisher)
    response = client.post(f"/governance/versions/{version.pk}/publish/", follow=True)
    assert "needs an approved bypass" in response.content.decode()
    version.refresh_from_db()
    assert version.state == VersionState.DRAFT


def test_an_admin_bypasses_from_the_page(client, admin_user, blocked_request):
    version = blocked_request.agent_version
    client.force_login(admin_user)
    client.post(f"/governance/versions/{version.pk}/bypass/", {"reason": REASON})
    assert blocked_request.bypasses.get().state == BypassState.APPROVED


def test_htmx_gets_only_the_checklist(client, builder, blocked_request):
    client.force_login(builder)
    url = f"/governance/versions/{blocked_request.agent_version.pk}/?part=gate"
    body = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert body.lstrip().startswith('<section id="gate"')
    # The poll that sees the decision made loads the whole page once, for the new buttons.
    assert 'hx-trigger="load" hx-select="main"' in body


def test_the_checklist_polls_itself_while_evaluating(client, builder, good_version, policy):
    client.force_login(builder)
    client.post(f"/governance/versions/{good_version.pk}/request/")
    body = page(client, builder, good_version).content.decode()
    assert f'hx-get="/governance/versions/{good_version.pk}/?part=gate"' in body


def test_a_version_one_may_not_see_is_not_found(client, outsider, blocked_request):
    assert page(client, outsider, blocked_request.agent_version).status_code == 404


# --- asking again while a decision is open ------------------------------------------------------


def test_a_passed_request_says_it_waits_for_a_publisher_and_offers_no_plain_request(
    client, author, passed_request
):
    body = page(client, author, passed_request.agent_version).content.decode()
    assert f"Request #{passed_request.pk} passed; it waits for a Publisher." in body
    assert "<button>Request publication</button>" not in body
    assert "<button>Request publication again…</button>" in body


def test_asking_again_shows_the_cost_and_runs_only_once_confirmed(
    client, author, passed_request, gate_dataset
):
    version = passed_request.agent_version
    newer = factories.dataset_version(
        gate_dataset, cases=[tool_case("refund", "Refund?")], checks=[TOOLS_CHECK]
    )
    client.force_login(author)
    url = f"/governance/versions/{version.pk}/request/"

    first = client.post(url)
    body = first.content.decode()
    assert first.status_code == 200
    assert version.publish_requests.count() == 1  # nothing ran, nothing was paid for
    assert f"Ask again for publication of {version}?" in body
    assert f"It supersedes publish request #{passed_request.pk} (passed)" in body
    assert f"<td>{newer}" in body and "newer" in body  # the new frozen version, not the old one
    assert f"<td>{passed_request.runs.get().dataset_version}</td>" in body
    assert 'id="confirm-total"' in body
    assert f"Yes, supersede request #{passed_request.pk} and run the gate again" in body

    done = client.post(url, {"confirmed": confirm_key(body)})
    assert done.status_code == 302
    passed_request.refresh_from_db()
    assert passed_request.state == RequestState.SUPERSEDED
    again = version.publish_requests.exclude(pk=passed_request.pk).get()
    assert again.state == RequestState.EVALUATING
    assert [run.dataset_version for run in again.runs.all()] == [newer]


def test_a_confirmation_of_what_changed_since_shows_the_new_plan(
    client, author, passed_request, gate_dataset
):
    version = passed_request.agent_version
    client.force_login(author)
    url = f"/governance/versions/{version.pk}/request/"
    seen = confirm_key(client.post(url).content.decode())
    newer = factories.dataset_version(gate_dataset, cases=[tool_case("x", "X?")])

    response = client.post(url, {"confirmed": seen})
    body = response.content.decode()
    assert response.status_code == 200
    assert "changed since you looked" in body
    assert f"<td>{newer}" in body
    assert version.publish_requests.count() == 1
    passed_request.refresh_from_db()
    assert passed_request.state == RequestState.PASSED


def test_a_first_request_runs_at_once(client, author, good_version, policy):
    client.force_login(author)
    response = client.post(f"/governance/versions/{good_version.pk}/request/")
    assert response.status_code == 302
    assert good_version.publish_requests.get().state == RequestState.EVALUATING


# --- publish, roll back and retire say what they rely on, and are confirmed ---------------------


def test_publish_names_the_passed_request_it_relies_on(client, publisher, passed_request):
    body = page(client, publisher, passed_request.agent_version).content.decode()
    assert f"Publish — gate passed, request #{passed_request.pk}" in body


def test_publish_names_the_bypass_it_uses(client, publisher, approved_bypass, admin_user):
    version = approved_bypass.publish_request.agent_version
    body = page(client, publisher, version).content.decode()
    assert (
        f"Publish — uses bypass #{approved_bypass.pk} approved by {admin_user.username}: {REASON}"
    ) in body

    client.force_login(publisher)
    url = f"/governance/versions/{version.pk}/publish/"
    first = client.post(url, {"reason": "ship it"})
    body = first.content.decode()
    assert first.status_code == 200
    assert f"Publish {version}?" in body
    assert f"Bypass #{approved_bypass.pk} is used up" in body
    assert 'name="reason" value="ship it"' in body
    approved_bypass.refresh_from_db()
    assert approved_bypass.state == BypassState.APPROVED
    version.refresh_from_db()
    assert version.state == VersionState.DRAFT

    client.post(url, {"reason": "ship it", "confirmed": confirm_key(body)})
    version.refresh_from_db()
    approved_bypass.refresh_from_db()
    assert version.state == VersionState.PUBLISHED
    assert approved_bypass.state == BypassState.USED


def test_retiring_the_live_version_warns_and_waits_for_the_confirmation(
    client, publisher, passed_request
):
    version = passed_request.agent_version
    client.force_login(publisher)
    publish = f"/governance/versions/{version.pk}/publish/"
    client.post(publish, {"confirmed": confirm_key(client.post(publish).content.decode())})
    version.refresh_from_db()
    assert version.state == VersionState.PUBLISHED

    url = f"/governance/versions/{version.pk}/retire/"
    first = client.post(url, {"reason": "withdrawn after an incident"})
    body = first.content.decode()
    assert f"{version} is the live version: support-bot then has no live version" in body
    version.refresh_from_db()
    assert version.state == VersionState.PUBLISHED

    client.post(url, {"reason": "withdrawn after an incident", "confirmed": confirm_key(body)})
    version.refresh_from_db()
    assert version.state == VersionState.RETIRED
    assert version.agent.live_version_id is None


# --- a refused form keeps its text and says why under the field ---------------------------------


@pytest.mark.parametrize(
    "reason,error",
    [
        ("too short", "A reason of at least 30 characters is required."),
        ("a" * 40, "The reason must explain why in words, not repeat characters."),
    ],
)
def test_a_refused_bypass_reason_comes_back_under_the_field(
    client, admin_user, blocked_request, reason, error
):
    version = blocked_request.agent_version
    client.force_login(admin_user)
    response = client.post(f"/governance/versions/{version.pk}/bypass/", {"reason": reason})
    body = response.content.decode()
    assert response.status_code == 400
    textarea = re.search(r"<textarea[^>]*>\s*(.*?)</textarea>", body, re.S)
    assert textarea.group(1) == reason  # what the Admin typed is still there
    # ... and the refusal stands under it, before the button, not at the top of the page.
    assert textarea.end() < body.index(error) < body.index("<button>Request bypass</button>")
    assert body.count(error) == 1
    assert not blocked_request.bypasses.exists()


def test_a_refused_note_comes_back_under_its_field(client, publisher, passed_request):
    version = passed_request.agent_version
    client.force_login(publisher)
    note = "x" * 2001
    url = f"/governance/versions/{version.pk}/publish/"
    body = client.post(url).content.decode()
    response = client.post(url, {"reason": note, "confirmed": confirm_key(body)})
    body = response.content.decode()
    assert response.status_code == 400
    field = body.index(f'value="{note}"')  # the note is kept in its field ...
    # ... and the refusal stands under it, inside the Publish form.
    assert field < body.index("reason: at most 2000 characters") < body.index("</form>", field)
    version.refresh_from_db()
    assert version.state == VersionState.DRAFT


def test_a_refusal_of_a_verb_not_offered_is_told_among_the_actions(
    client, publisher, blocked_request
):
    version = blocked_request.agent_version
    client.force_login(publisher)
    response = client.post(f"/governance/versions/{version.pk}/publish/")
    body = response.content.decode()
    assert response.status_code == 409
    assert body.index("<h2>Actions</h2>") < body.index('id="refused"')
    assert body.count("needs an approved bypass") == 1


# --- badges -------------------------------------------------------------------------------------


def test_every_state_badge_has_a_colour(client, builder, passed_request):
    """The page's badges carry their state as a class, and the stylesheet colours each one."""
    body = page(client, builder, passed_request.agent_version).content.decode()
    assert '<span class="status passed">passed</span>' in body
    assert '<span class="status draft">draft</span>' in body
    style = body[body.index("<style>") : body.index("</style>")]
    for state in [*RequestState.values, *BypassState.values, *VersionState.values]:
        assert re.search(rf"\.{state}\b[^{{]*{{[^}}]*background", style), state


def test_a_refused_bypass_verb_is_told_in_its_row(client, admin_user, pending_bypass):
    version = pending_bypass.publish_request.agent_version
    client.force_login(admin_user)
    response = client.post(f"/governance/bypasses/{pending_bypass.pk}/approve/")
    body = response.content.decode()
    assert response.status_code == 403
    table = body[body.index("<h2>Bypasses</h2>") :]
    assert "A second, different Admin must approve this bypass." in table
    assert f"/governance/versions/{version.pk}/" in body
    pending_bypass.refresh_from_db()
    assert pending_bypass.state == BypassState.REQUESTED


def test_a_builder_is_told_why_an_agent_without_a_gate_dataset_cannot_be_requested(
    client, author, policy, publisher
):
    agent = factories.agent("billing-bot")  # under the global policy, no dataset chosen for it
    version = factories.agent_version(agent)
    body = page(client, author, version).content.decode()
    assert "Publication cannot be requested yet: No gate dataset is chosen for billing-bot" in body
    assert f"/admin/governance/gatedataset/add/?agent={agent.pk}" in body
    assert "<button>Request publication</button>" not in body

    # A Publisher may not ask for a draft at all: the reason is not theirs to read here.
    assert "cannot be requested yet" not in page(client, publisher, version).content.decode()
    GateDataset.objects.create(agent=agent, dataset=policy.gate_datasets.get())
    body = page(client, author, version).content.decode()
    assert "<button>Request publication</button>" in body and "cannot be requested" not in body


# --- an incomplete gate ------------------------------------------------------------------------


AGENT_MISSING = (
    "1 trial(s) in error: the agent (python tests.support.agents_under_test.echo) did not "
    "answer: RuntimeError: the agent raised"
)


def test_an_incomplete_gate_says_incomplete_names_what_is_missing_and_offers_running_again(
    client, author, incomplete_request
):
    body = page(client, author, incomplete_request.agent_version).content.decode()

    assert 'id="release" class="verdict incomplete" data-outcome="incomplete"' in body
    assert 'Release: <span class="status incomplete">incomplete</span>' in body
    assert 'Release: <span class="status fail">' not in body
    assert AGENT_MISSING in body and "Make the agent answer" in body
    assert "then run the gate again" in body
    # Running the gate again is the first step offered, before any bypass.
    again = body.index("<button>Request publication again…</button>")
    assert "runs the gate again: the first step for an incomplete gate" in body[again:]
    assert f"Request #{incomplete_request.pk} is incomplete" in body
    assert "blocked at checks_scored" not in body


def test_a_bypass_of_an_incomplete_gate_says_incomplete_in_its_form_confirmation_and_audit(
    client, admin_user, publisher, incomplete_request
):
    version = incomplete_request.agent_version
    body = page(client, admin_user, version).content.decode()
    assert "<h2>Bypass the incomplete decision</h2>" in body
    assert "Bypass the blocked decision" not in body
    client.post(f"/governance/versions/{version.pk}/bypass/", {"reason": REASON})
    bypass = incomplete_request.bypasses.get()
    entry = AuditEntry.objects.get(action="governance.bypass.request")
    assert entry.after["outcome"] == "incomplete"

    client.force_login(publisher)
    url = f"/governance/versions/{version.pk}/publish/"
    first = client.post(url, {"reason": "ship it"}).content.decode()
    assert "The gate runs were incomplete, not failed: their evidence is missing" in first
    assert AGENT_MISSING in first
    client.post(url, {"reason": "ship it", "confirmed": confirm_key(first)})
    version.refresh_from_db()
    assert version.state == VersionState.PUBLISHED
    published = AuditEntry.objects.get(action="governance.version.publish")
    assert (published.after["outcome"], published.after["bypass"]) == ("incomplete", bypass.pk)


def test_a_failed_gate_still_reads_fail_with_its_reasons(client, builder, blocked_request):
    body = page(client, builder, blocked_request.agent_version).content.decode()
    assert 'data-outcome="failed"' in body
    assert 'Release: <span class="status fail">fail</span>' in body
    assert "incomplete" not in body.split('id="release"')[1].split("</p>")[0]


def test_the_requester_withdraws_her_own_bypass_where_others_deny_it(
    client, admin_user, pending_bypass
):
    from tests.support import factories

    version = pending_bypass.publish_request.agent_version
    own = page(client, admin_user, version).content.decode()
    assert "<button>withdraw</button>" in own and "<button>deny</button>" not in own
    other = factories.user("admin2", role="Admin")
    theirs = page(client, other, version).content.decode()
    assert "<button>deny</button>" in theirs and "<button>withdraw</button>" not in theirs
