"""A publish request for a `client` version, end to end over real HTTP (docs/client.md).

The request starts its gate runs `waiting` instead of queueing them for workers that cannot
run the team's code; the publish page and the next step say they wait for the client; the
client finds them (`GET /runs/?status=waiting&agent=&version=`), uploads, finishes; the gate
decides as for any run; a Publisher publishes; `GET /versions/{id}/publication/` says who and
on which decision, for `sherlock verify`.
"""

import httpx2 as httpx
import pytest

from evaluations.choices import RunStatus
from evaluations.models import Run
from governance.choices import RequestState
from governance.models import GateDataset, PublishingPolicy, PublishRequest
from tests.support import factories
from tests.support.api_server import api_server
from tests.support.governance import REASON, TOOLS_CHECK, api_key, finish_gate_runs, tool_case

pytestmark = pytest.mark.usefixtures("live_db")


@pytest.fixture
def server(live_db, tmp_path):
    with api_server(tmp_path / "server.log") as url:
        yield url


@pytest.fixture
def world(live_db):
    admin = factories.user("admin", role="Admin")
    gate = factories.dataset("gate-basics")
    factories.dataset_version(
        gate,
        cases=[tool_case("shipping", "How long is shipping?"), tool_case("refund", "Refund?")],
        checks=[TOOLS_CHECK],
    )
    policy = PublishingPolicy.objects.create(
        name="Default", repetitions=2, min_case_pass_rate=1.0, created_by=admin
    )
    policy.gate_datasets.add(gate)
    GateDataset.objects.create(agent=factories.agent("support-bot"), dataset=gate)
    return {
        "admin": admin,
        "builder": factories.user("builder", role="Builder"),
        "publisher": factories.user("publisher", role="Publisher"),
    }


def connect(server, user):
    _, secret = api_key(user)
    return httpx.Client(
        base_url=f"{server}/api/v1", headers={"Authorization": f"Token {secret}"}, timeout=30
    )


def test_publication_names_the_decision_that_published_a_version(world, client):
    from agents.models import AgentVersion
    from governance.actions.publish_version import PublishVersion
    from governance.actions.request_publication import RequestPublication

    version = AgentVersion.objects.create(
        agent=_gated(factories.agent("other-bot")), number=1, adapter="client", config={}
    )
    request = RequestPublication(acting_user=world["builder"], agent_version=version).execute()
    finish_gate_runs(request)
    PublishVersion(acting_user=world["publisher"], agent_version=version, reason="ok").execute()
    client.force_login(world["builder"])
    answer = client.get(f"/api/v1/versions/{version.pk}/publication/").json()
    assert answer["published"] is True and answer["is_live"] is True
    assert answer["decision"] == {"id": request.pk, "outcome": "pass"}
    assert answer["bypass"] is None and answer["published_by"] == "publisher"
    outsider = factories.user("outsider")
    client.force_login(outsider)
    assert client.get(f"/api/v1/versions/{version.pk}/publication/").status_code == 404


def transcript(case_key):
    return {
        "output": f"About {case_key}: see the knowledge base.",
        "tool_calls": [{"name": "kb.search", "arguments": {"q": case_key}}],
        "latency_ms": 80,
        "cost_usd": 0.001,
        "declared_complete": True,
    }


def test_a_client_versions_gate_is_fulfilled_by_the_client(world, server):
    builder = connect(server, world["builder"])
    publisher = connect(server, world["publisher"])
    admin = connect(server, world["admin"])
    version = builder.post(
        "/versions/ensure/",
        json={"agent": "support-bot", "name": "c0ffee", "adapter": "client", "config": {}},
    ).json()

    requested = builder.post(f"/versions/{version['id']}/request-publication/")
    assert requested.status_code == 201, requested.text
    request_id = requested.json()["id"]
    gate_run = Run.objects.get(publish_requests=request_id)
    assert gate_run.status == RunStatus.WAITING and gate_run.repetitions == 2

    waiting = builder.get(
        "/runs/", params={"status": "waiting", "agent": "support-bot", "version": "c0ffee"}
    ).json()
    assert [run["id"] for run in waiting["results"]] == [gate_run.pk]
    assert waiting["results"][0]["purpose"] == "gate"

    taken = builder.post(
        "/runs/client/",
        json={
            "agent": "support-bot",
            "version": "c0ffee",
            "dataset": "gate-basics",
            "purpose": "gate",
            "publish_request": request_id,
            "metadata": {"git_commit": "c0ffee", "ci_job_url": "https://ci.example/job/1"},
        },
    )
    assert taken.status_code == 200, taken.text
    assert taken.json()["id"] == gate_run.pk and taken.json()["repetitions"] == 2
    unpublished = builder.get(f"/versions/{version['id']}/publication/").json()
    assert unpublished["published"] is False and unpublished["decision"] is None

    work = builder.get(taken.json()["work_url"], params={"page_size": 500}).json()["results"]
    assert len(work) == 4
    items = [{"key": item["key"], "transcript": transcript(item["case"])} for item in work]
    assert builder.post(taken.json()["upload_url"], json={"items": items}).json()["remaining"] == 0
    assert builder.post(taken.json()["finish_url"]).status_code == 202

    # The gate decides as for any run: blocked here (no outcome verifier proves the answers).
    decided = builder.get(f"/publish-requests/{request_id}/").json()
    assert decided["runs"][0]["status"] == "completed"
    assert decided["state"] == RequestState.BLOCKED
    assert decided["decision"]["first_failing_gate"] == "unknown_effects"
    checks_scored = next(g for g in decided["decision"]["gates"] if g["name"] == "checks_scored")
    assert checks_scored["status"] == "pass"  # every uploaded transcript was scored

    # An Admin's bypass, then the Publisher publishes; `sherlock verify` sees on what.
    bypass = admin.post(f"/publish-requests/{request_id}/bypass/", json={"reason": REASON})
    assert bypass.status_code == 201, bypass.text
    assert bypass.json()["state"] == "approved"  # this policy needs no second Admin
    published = publisher.post(
        f"/versions/{version['id']}/publish/", json={"reason": "customers waiting"}
    )
    assert published.status_code == 200, published.text

    publication = builder.get(f"/versions/{version['id']}/publication/").json()
    assert publication["published"] is True and publication["state"] == "published"
    assert publication["published_by"] == "publisher" and publication["published_at"]
    assert publication["decision"] == {"id": request_id, "outcome": "fail"}
    assert publication["bypass"] == {
        "id": bypass.json()["id"],
        "reason": REASON,
        "approved_by": bypass.json()["approved_by"],
    }
    assert PublishRequest.objects.get(pk=request_id).state == RequestState.BYPASSED
    admin.close()
    builder.close()
    publisher.close()


def test_the_publish_page_and_next_step_say_the_gate_waits_for_the_client(world, client):
    from agents.models import AgentVersion
    from governance.actions.request_publication import RequestPublication
    from governance.publishing.next_step import next_step

    version = AgentVersion.objects.create(
        agent=_gated(factories.agent("other-bot")), number=1, adapter="client", config={}
    )
    request = RequestPublication(acting_user=world["builder"], agent_version=version).execute()
    step = next_step(version, request, request.policy)
    assert step.code == "waiting_for_client" and "sherlock run" in step.why
    client.force_login(world["builder"])
    page = client.get(f"/governance/versions/{version.pk}/")
    assert page.status_code == 200
    assert "Waiting for the client" in page.content.decode()


def _gated(agent):
    """`agent` with the global policy's gate datasets chosen for it, as an Admin would."""
    from tests.support.online import choose_global_gates

    choose_global_gates(agent)
    return agent
