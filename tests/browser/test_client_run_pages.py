"""A client run's pages as a Builder sees them (docs/client.md): the run page says it waits for
the client and shows where it came from; the publish page says the gate waits for the client."""

import pytest

from agents.models import AgentVersion
from governance.actions.request_publication import RequestPublication
from governance.models import GateDataset, PublishingPolicy
from tests.support import factories
from tests.support.browser import log_in
from tests.support.governance import TOOLS_CHECK, tool_case

pytestmark = [pytest.mark.slow]


def test_a_builder_sees_a_gate_run_waiting_for_the_client(server, browser, shot):
    builder = factories.user("builder", role="Builder")
    admin = factories.user("admin", role="Admin")
    gate = factories.dataset("gate-basics")
    factories.dataset_version(
        gate,
        cases=[tool_case("shipping", "How long is shipping?"), tool_case("refund", "Refund?")],
        checks=[TOOLS_CHECK],
    )
    policy = PublishingPolicy.objects.create(
        name="Default", repetitions=1, min_case_pass_rate=1.0, created_by=admin
    )
    policy.gate_datasets.add(gate)
    version = AgentVersion.objects.create(
        agent=factories.agent("support-bot"),
        number=1,
        name="c0ffee1",
        adapter="client",
        config={"entrypoint": "bot.main:answer"},
    )
    GateDataset.objects.create(agent=version.agent, dataset=gate)
    request = RequestPublication(acting_user=builder, agent_version=version).execute()
    run = request.runs.get()
    run.source = {
        "git_commit": "c0ffee1",
        "git_branch": "feature/refunds",
        "git_repository": "https://github.com/acme/support-bot",
        "ci_provider": "github",
        "ci_job_url": "https://github.com/acme/support-bot/actions/runs/7",
        "pull_request": "12",
    }
    run.save(update_fields=["source"])

    page = browser.new_page()
    log_in(page, server, "builder", f"/governance/versions/{version.pk}/")
    page.wait_for_selector("#waiting-for-client")
    assert "sherlock run" in page.inner_text("#gate")
    shot(page, "client-gate-publish-page")

    page.goto(f"{server}/runs/{run.pk}/")
    page.wait_for_selector("#run-source")
    assert "0 of 2 work items uploaded" in page.inner_text("#waiting-for-client")
    link = page.locator("#run-source a", has_text="actions/runs/7")
    assert link.get_attribute("href") == "https://github.com/acme/support-bot/actions/runs/7"
    shot(page, "client-run-page")
