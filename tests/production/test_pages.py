"""The trace pages for the roles that may see an agent, and "Add to dataset" through the case
verb: who may (an Editor of the dataset who sees the trace), who may not, what the case holds
and what the audit log says."""

import pytest

from evaluations.models import CaseVersion
from governance.models import AuditEntry
from production.models import Trace
from production.traces.closing import complete_traces
from tests.support import factories
from tests.support.governance import grant_on
from tests.support.otel_clients import export_body, finished_spans

RESOURCE = {"sherlock.agent": "support-bot", "sherlock.agent.version": 1}


def rag_turn(tracer):
    with tracer.start_as_current_span("support-chain") as chain:
        chain.set_attribute("openinference.span.kind", "CHAIN")
        chain.set_attribute("input.value", "Can I get a refund?")
        chain.set_attribute("output.value", "Yes, within 30 days.")
        with tracer.start_as_current_span("retrieve") as retriever:
            retriever.set_attribute("openinference.span.kind", "RETRIEVER")
            retriever.set_attribute("retrieval.documents.0.document.content", "Refunds: 30 days.")


@pytest.fixture
def trace(client, agent, builder_key):
    response = client.post(
        "/api/v1/v1/traces",
        data=export_body(finished_spans(RESOURCE, rag_turn)),
        content_type="application/x-protobuf",
        HTTP_AUTHORIZATION=f"Token {builder_key}",
    )
    assert response.status_code == 200
    complete_traces()
    return Trace.objects.get()


@pytest.fixture
def draft(db):
    return factories.dataset_version(factories.dataset("refunds"), frozen=False)


@pytest.mark.parametrize("role", ["Editor", "Builder", "Publisher", "Admin"])
def test_every_role_sees_the_trace_list_and_page(logged_in, trace, role):
    client = logged_in(factories.user(f"u-{role.lower()}", role=role))
    listing = client.get("/production/traces/")
    assert listing.status_code == 200 and b"Can I get a refund?" in listing.content
    page = client.get(f"/production/traces/{trace.pk}/")
    assert page.status_code == 200
    for shown in (b"complete", b"Yes, within 30 days.", b"Refunds: 30 days.", b"support-chain"):
        assert shown in page.content
    assert b'id="scores"' in page.content


def test_a_user_who_may_not_see_the_agent_sees_neither_list_nor_page(logged_in, trace):
    client = logged_in(factories.user("stranger"))
    assert b"Can I get a refund?" not in client.get("/production/traces/").content
    assert client.get(f"/production/traces/{trace.pk}/").status_code == 404


def test_a_builder_of_another_agent_does_not_see_the_trace(logged_in, trace):
    other = factories.agent("other-bot")
    user = grant_on(factories.user("other-builder"), "Builder", other)
    assert logged_in(user).get(f"/production/traces/{trace.pk}/").status_code == 404


def test_the_list_filters_by_state_in_a_constant_number_of_queries(
    logged_in, trace, editor, django_assert_max_num_queries
):
    client = logged_in(editor)
    assert b"Can I get a refund?" not in client.get("/production/traces/?state=open").content
    with django_assert_max_num_queries(12):
        client.get("/production/traces/")


def test_an_editor_adds_the_trace_to_a_draft_as_a_case(logged_in, trace, editor, draft):
    client = logged_in(editor)
    response = client.post(
        f"/production/traces/{trace.pk}/add-to-dataset/", {"dataset_version": draft.pk}
    )
    assert response.status_code == 302
    case = CaseVersion.objects.get(dataset_version=draft)
    assert case.case.key == f"trace-{trace.trace_id[:16]}"
    assert case.input == "Can I get a refund?"
    # What production retrieved is not the reference: kept in the audit entry, not the case.
    assert case.contexts == []
    assert case.expected == {}  # left to the Editor
    assert case.tags == ["production", f"trace:{trace.trace_id}"]
    codes = list(AuditEntry.objects.values_list("action", flat=True))
    assert "evaluations.case.create" in codes and "production.trace.add_to_dataset" in codes
    entry = AuditEntry.objects.get(action="production.trace.add_to_dataset")
    assert entry.after["trace_id"] == trace.trace_id and entry.after["case"] == case.case.key
    assert entry.after["retrieved_contexts"] == ["Refunds: 30 days."]
    page = client.get(response["Location"])
    assert b"added to" in page.content


def test_the_retrieved_contexts_become_reference_only_when_the_editor_says_so(
    logged_in, trace, editor, draft
):
    client = logged_in(editor)
    assert b'name="contexts_as_reference"' in client.get(f"/production/traces/{trace.pk}/").content
    client.post(
        f"/production/traces/{trace.pk}/add-to-dataset/",
        {"dataset_version": draft.pk, "contexts_as_reference": "on"},
    )
    case = CaseVersion.objects.get(dataset_version=draft)
    assert case.contexts == ["Refunds: 30 days."]
    entry = AuditEntry.objects.get(action="production.trace.add_to_dataset")
    assert entry.after["contexts_as_reference"] is True


@pytest.mark.parametrize("role", ["Builder", "Publisher"])
def test_roles_without_the_editor_role_may_not_add_the_trace(logged_in, trace, draft, role):
    client = logged_in(factories.user(f"u-{role.lower()}", role=role))
    page = client.get(f"/production/traces/{trace.pk}/")
    assert b"needs the Editor role" in page.content
    response = client.post(
        f"/production/traces/{trace.pk}/add-to-dataset/", {"dataset_version": draft.pk}
    )
    assert response.status_code == 404  # no draft this user may edit
    assert not CaseVersion.objects.exists()


def test_a_frozen_version_is_not_offered_and_a_taken_key_is_refused_with_a_message(
    logged_in, trace, editor, draft
):
    frozen = factories.dataset_version(factories.dataset("frozen-ds"), frozen=True)
    client = logged_in(editor)
    url = f"/production/traces/{trace.pk}/add-to-dataset/"
    assert client.post(url, {"dataset_version": frozen.pk}).status_code == 404
    client.post(url, {"dataset_version": draft.pk, "key": "taken"})
    page = client.post(url, {"dataset_version": draft.pk, "key": "taken"}, follow=True)
    assert page.content.count(b"already in this version") == 1  # once: the page places it
    assert CaseVersion.objects.count() == 1
    # Shown again as chosen: the draft in its picker, the key typed.
    body = page.content.decode()
    assert f'<option value="{draft.pk}" selected>{draft}</option>' in body
    assert 'name="key" value="taken"' in body


def test_a_submit_with_no_draft_chosen_says_so_and_adds_nothing(logged_in, trace, editor, draft):
    client = logged_in(editor)
    page = client.get(f"/production/traces/{trace.pk}/").content.decode()
    assert 'data-ajax--url="/pick/dataset-draft/"' in page and str(draft) not in page
    assert 'name="dataset_version" id="id_dataset_version" required' in page
    url = f"/production/traces/{trace.pk}/add-to-dataset/"
    page = client.post(url, {"dataset_version": ""}, follow=True)
    assert page.redirect_chain[-1][0] == f"/production/traces/{trace.pk}/"
    assert b"Choose the draft version to add the case to." in page.content
    assert not CaseVersion.objects.exists()


def test_an_open_trace_cannot_be_added_yet(logged_in, client, agent, builder_key, editor, draft):
    spans = finished_spans(RESOURCE, rag_turn)
    client.post(
        "/api/v1/v1/traces",
        data=export_body(spans[:1]),  # the retriever alone: still open
        content_type="application/x-protobuf",
        HTTP_AUTHORIZATION=f"Token {builder_key}",
    )
    trace = Trace.objects.get()
    editor_client = logged_in(editor)
    assert (
        b"Possible once the trace completes"
        in editor_client.get(f"/production/traces/{trace.pk}/").content
    )
    page = editor_client.post(
        f"/production/traces/{trace.pk}/add-to-dataset/", {"dataset_version": draft.pk}, follow=True
    )
    assert b"still open" in page.content and not CaseVersion.objects.exists()
