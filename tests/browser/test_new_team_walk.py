"""A new team's first walk through Sherlock in chromium, on a database seeded as
`make run` seeds it (`seed_demo`), every step through the pages a person uses (Sherlock's pages
and the admin), and then the same pages tried by an outsider.

- The seeded Admin adds the team on /people/: a Builder, a Publisher and an outsider with no
  role by invitation (each opens the link, sets a password and signs in), and an Editor through
  single sign-on (a real OIDC provider on loopback, tests/support/oidc_provider.py, whose `qa`
  group the Admin maps to Editor).
- The Editor builds a dataset from nothing in the admin: the dataset (its name only; the slug
  follows), a draft, a case by hand, two by a JSONL import after its preview, checks of three
  groups (behavioural `tools_used`, RAG `context_recall_overlap`, data task `table_columns`:
  none needs a judge), and the freeze after its confirmation page.
- The Builder registers an agent with the `http` adapter pointing at a service on loopback,
  registers the tool it calls as the agent's own, adds its version, starts a run on /runs/ and
  reads its verdict on the run's page; asking to
  publish, the Builder is refused: the agent has no gate dataset, and the page says who sets one.
- The Admin sets a policy for the agent and chooses its gate dataset in the admin.
- The Builder requests publication (the gate runs in the page server: SHERLOCK_Q_SYNC) and the
  Publisher publishes on the publish page; the Admin finds each step in the audit log.
- The outsider tries the same pages and is refused on each, as the pages say it.

Screenshots go to SHERLOCK_SCREENSHOTS (default /tmp/walk/), numbered in the walk's order.
"""

import os
import re
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.support.browser import pick
from tests.support.loopback_agent import LoopbackAgent
from tests.support.oidc_provider import sso_sign_in

pytestmark = [pytest.mark.slow]
expect = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed").expect

SHOTS = Path(os.environ.get("SHERLOCK_SCREENSHOTS") or "/tmp/walk")
IMPORT = (
    '{"key": "shipping", "input": "How long is shipping?", "expected_tools": ["kb.search"], '
    '"contexts": ["Shipping takes 3 to 5 days."]}\n'
    '{"key": "hours", "input": "When are you open?", "expected_tools": ["kb.search"], '
    '"contexts": ["We are open 9 to 5."]}\n'
)
CONTEXTS = ["Shipping takes 3 to 5 days.", "We are open 9 to 5.", "Returns are free for 30 days."]
# The checks the Editor adds, one of each group that needs no judge (docs/checks.md, "The kinds").
CHECKS = [
    ("Searches first", "tools_used", "{}"),
    ("Recalls the context", "context_recall_overlap", "{}"),
    ("Answers as a table", "table_columns", '{"columns": ["topic", "answer"]}'),
]


def answer(request):
    """The agent under test: it searches the knowledge base and answers from what it found, as a
    table, with what the call cost (billed, so the contract's cost is covered)."""
    return 200, {
        "output": "| topic | answer |\n|---|---|\n| shipping | 3 to 5 days |\n| hours | 9 to 5 |",
        "tool_calls": [{"name": "kb.search", "arguments": {"q": "x"}, "result": "found"}],
        "contexts": CONTEXTS,
        "cost_usd": 0.002,
    }


@pytest.fixture
def agent_service():
    with LoopbackAgent(answer) as running:
        yield running


@pytest.fixture
def server_env(provider):
    # The runs execute in the page server's process; it signs in through the provider.
    return {"SHERLOCK_Q_SYNC": "1", **provider.env()}


@pytest.fixture
def seeded(live_db):
    call_command("seed_demo", verbosity=0)


@pytest.fixture
def snap():
    SHOTS.mkdir(parents=True, exist_ok=True)
    return lambda page, name: page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def new_page(browser):
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    context.set_default_timeout(10_000)
    return context.new_page()


def sign_in(browser, server, username, password, next_url="/"):
    page = new_page(browser)
    page.goto(f"{server}/accounts/login/?next=/runs/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_selector(f"header .who:has-text('{username}')")
    page.goto(f"{server}{next_url}")
    return page


def invite(admin, browser, username, role):
    """The Admin invites `username` on /people/; the invitee opens the link and sets a password."""
    admin.fill("#id_invite_username", username)
    admin.select_option("#id_invite_role", role)
    admin.click("#invite button")
    link = admin.input_value("#invite-url")
    page = browser.new_context().new_page()
    page.goto(link)
    page.fill("#id_password1", f"{username}'s own long password")
    page.fill("#id_password2", f"{username}'s own long password")
    page.click("#join button")
    page.wait_for_selector("text=Your password is set")
    page.context.close()
    return f"{username}'s own long password"


def saved(page, button="input[name=_save]"):
    """Save an admin form: the page that follows says it was saved, with no error on a field."""
    page.click(button)
    expect(page.locator(".messagelist .success")).to_be_visible()
    assert page.locator(".errorlist").count() == 0, page.inner_text("#content")
    return page.inner_text(".messagelist")


def test_a_new_team_walks_from_people_to_a_published_version(
    seeded, agent_service, provider, server, browser, snap
):
    # 1. The seeded Admin adds the team on /people/: three by invitation...
    admin = sign_in(browser, server, "admin", "sherlock-admin", "/people/")
    passwords = {
        name: invite(admin, browser, name, role)
        for name, role in [("bo", "Builder"), ("pat", "Publisher"), ("otto", "")]
    }
    # ... and the Editor through single sign-on: the provider's `qa` group maps to Editor.
    admin.click("text=Single sign-on mapping")
    section = admin.locator("section[data-provider=corp]")
    section.locator("input[name=claim_path]").fill("groups")
    section.locator("button[name=configure]").click()
    section.locator("form.map input[name=group]").fill("qa")
    section.locator("form.map select[name=role]").select_option("Editor")
    section.locator("form.map button").click()
    expect(admin.locator("text=Mapping changed")).to_be_visible()
    snap(admin, "01-sso-mapping")
    provider.set_user("erin-sub", {"preferred_username": "erin", "groups": ["qa"]})
    erin = new_page(browser)
    sso_sign_in(erin, server, "erin-sub")
    expect(erin.locator("header .who")).to_have_text("erin")

    admin.goto(f"{server}/people/")
    for name, role in [("erin", "Editor"), ("bo", "Builder"), ("pat", "Publisher")]:
        expect(admin.locator(f"tr[data-user={name}]")).to_contain_text(role)
    expect(admin.locator("tr[data-user=erin]")).to_contain_text("SSO")
    expect(admin.locator("tr[data-user=otto]")).to_contain_text("none")
    snap(admin, "02-people")
    bo = sign_in(browser, server, "bo", passwords["bo"])
    pat = sign_in(browser, server, "pat", passwords["pat"])
    otto = sign_in(browser, server, "otto", passwords["otto"])

    # 2. The Editor builds a dataset from nothing: its name (the slug follows), then a draft.
    erin.goto(f"{server}/admin/evaluations/dataset/add/")
    erin.locator("#id_name").press_sequentially("Shop questions")
    expect(erin.locator("#id_slug")).to_have_value("shop-questions")
    assert "was added successfully" in saved(erin)
    erin.click("a:has-text('shop-questions')")  # the message links the new dataset
    snap(erin, "03-dataset-page")
    erin.click("button:has-text('Start a new draft version')")
    expect(erin.locator(".messagelist")).to_have_text(
        "shop-questions: new draft version v1 started; open it to add and change cases."
    )
    erin.click(".messagelist a:has-text('v1')")
    draft_url = erin.url

    # A case by hand, from the draft's page; saving goes back to the draft.
    erin.click("a.addlink:has-text('Add case')")
    erin.fill("#id_key", "returns")
    erin.fill("#id_input", "Can I return my shoes?")
    erin.fill("#id_contexts", "Returns are free for 30 days.")
    erin.fill("#id_expected_tools", '[{"name": "kb.search"}]')
    snap(erin, "04-case-add")
    assert "was added successfully" in saved(erin)
    expect(erin).to_have_url(draft_url)
    expect(erin.locator(".field-cases")).to_contain_text("returns")
    snap(erin, "05-draft-page")

    # Two cases by import: the preview says what it adds before anything is written.
    erin.click(".field-dataset a:has-text('shop-questions')")
    erin.click("a:has-text('Import cases')")
    erin.set_input_files(
        "input[name=file]",
        {"name": "shop.jsonl", "mimeType": "application/x-ndjson", "buffer": IMPORT.encode()},
    )
    erin.click("input[name=preview]")
    preview = erin.locator("#import-preview")
    expect(preview).to_contain_text("2 added")
    expect(erin.locator("#import-added")).to_have_text("shipping, hours")
    snap(erin, "06-import-preview")
    erin.click("input[name=confirm]")
    expect(erin.locator(".messagelist")).to_contain_text(
        "Imported into shop-questions v1 (draft): 2 added, 0 changed, 0 unchanged."
    )

    # Checks of three groups, from the draft's page.
    for label, kind, params in CHECKS:
        erin.goto(draft_url)
        erin.click("a.addlink:has-text('Add check')")
        erin.select_option("#id_kind", kind)
        erin.fill("#id_label", label)
        erin.fill("#id_params", params)
        assert "was added successfully" in saved(erin)
    erin.goto(draft_url)
    for label, _, _ in CHECKS:
        expect(erin.locator("#content")).to_contain_text(label)
    snap(erin, "07-draft-with-checks")

    # The freeze, after the page that names what becomes read-only.
    erin.click("#freeze-link")
    plan = erin.locator("#freeze-plan")
    expect(plan).to_contain_text("3 cases become read-only")
    expect(plan).to_contain_text("3 checks become read-only")
    erin.fill("#id_note", "First version, written by hand and imported.")
    snap(erin, "08-freeze-confirm")
    erin.click("input[name=confirm]")
    expect(erin.locator(".messagelist .success")).to_contain_text("shop-questions v1: frozen.")
    expect(erin.locator(".frozen-banner")).to_contain_text("is frozen")

    # 3. The Builder registers the agent and its http version, then runs it on the dataset.
    bo.goto(f"{server}/admin/agents/agent/add/")
    bo.locator("#id_name").press_sequentially("Shop helper")
    expect(bo.locator("#id_slug")).to_have_value("shop-helper")
    assert "was added successfully" in saved(bo)
    # Its tool is its own: the demo's `kb.search` belongs to the demo's agents.
    from agents.models import Agent

    helper = Agent.objects.get(slug="shop-helper")
    bo.goto(f"{server}/admin/agents/tool/add/?agent={helper.pk}&name=kb.search")
    expect(bo.locator(".field-agent .select2-selection")).to_contain_text("shop-helper")
    snap(bo, "09-tool-add")
    assert "was added successfully" in saved(bo)
    bo.goto(f"{server}/admin/agents/agent/{helper.pk}/change/")
    bo.click("#add-version")
    expect(bo.locator(".field-agent .select2-selection")).to_contain_text("shop-helper")
    bo.select_option("#id_adapter", "http")
    expect(bo.locator("fieldset.adapter-http")).to_be_visible()
    bo.fill("#id_http__url", f"{agent_service.url}/answer")
    bo.fill("#id_http__timeout", "5")
    snap(bo, "09-version-add")
    assert "was added successfully" in saved(bo)

    bo.goto(f"{server}/runs/")
    bo.click("text=Start a run")
    pick(bo, "agent_version", "shop", "shop-helper v1")  # typed and picked
    pick(bo, "dataset_version", "shop", "shop-questions v1")
    bo.click("#start-run button[name=estimate]")
    expect(bo.locator("#start-estimate")).to_be_visible()
    snap(bo, "10-start-run-estimate")
    bo.click("#start-run button[name=confirm]")
    bo.wait_for_url(f"{server}/runs/*/")
    expect(bo.locator("#verdict")).to_contain_text("PASSED")
    snap(bo, "11-run-page")
    # One POST per case, with its input and never its answer key (docs/adapters.md, `http`).
    assert sorted(r["body"]["input"] for r in agent_service.requests) == [
        "Can I return my shoes?",
        "How long is shipping?",
        "When are you open?",
    ]
    assert not any("contexts" in r["body"] for r in agent_service.requests)

    # Asking to publish before anyone chose a gate dataset: refused, saying who chooses one.
    bo.click("header nav a:has-text('Publish')")
    bo.click("tr:has-text('shop-helper v1') a:has-text('publish page')")
    expect(bo.locator("h1")).to_have_text("Publish shop-helper v1")
    publish_url = bo.url
    why = bo.locator("#why-not-request")
    expect(why).to_contain_text("No gate dataset is chosen for shop-helper")
    expect(why).to_contain_text("an Admin chooses one")
    expect(bo.locator("#verb-request")).to_have_count(0)
    snap(bo, "12-publish-refused")

    # 4. The Admin sets a policy for the agent, then chooses its gate dataset.
    admin.goto(f"{server}/admin/governance/publishingpolicy/add/")
    admin.fill("#id_name", "Shop helper policy")
    pick(admin, "agent", "shop", "shop-helper")
    admin.fill("#id_min_case_pass_rate", "1")
    snap(admin, "13-policy-add")
    assert "“Shop helper policy v1” was added successfully" in saved(admin)
    admin.goto(f"{server}/admin/")
    admin.click("#content-main a:has-text('Gate datasets')")
    admin.click(".object-tools a.addlink")
    pick(admin, "agent", "shop", "shop-helper")
    pick(admin, "dataset", "shop", "shop-questions")
    snap(admin, "14-gate-dataset-add")
    assert "was added successfully" in saved(admin)

    # 5. The Builder requests publication: the gate runs on the chosen dataset and passes.
    bo.goto(publish_url)
    bo.click("#verb-request button")
    expect(bo.locator("main")).to_contain_text(
        "shop-helper v1: publication requested, the gate runs started."
    )
    expect(bo.locator("main")).to_contain_text("policy Shop helper policy v1")
    expect(bo.locator("main")).to_contain_text("shop-questions v1 completed")
    expect(bo.locator("#waiting")).to_have_text(
        re.compile(r"Request #\d+ passed; it waits for a Publisher\.")
    )
    expect(bo.locator("#verb-publish")).to_have_count(0)  # not the Builder's to publish
    snap(bo, "15-publish-requested")

    # The Publisher publishes, after the confirmation says what goes live.
    pat.goto(publish_url)
    expect(pat.locator("#verb-publish .relies")).to_have_text(
        re.compile(r"Publish — gate passed, request #\d+")
    )
    pat.fill("#verb-publish input[name=reason]", "The gate passed on shop-questions.")
    pat.click("text=Publish…")
    confirm = pat.locator("#confirm")
    expect(confirm).to_contain_text("Publish shop-helper v1?")
    expect(confirm).to_contain_text("shop-helper v1 becomes live")
    snap(pat, "16-publish-confirm")
    pat.click("text=Yes, publish shop-helper v1")
    expect(pat.locator("main")).to_contain_text("shop-helper v1: published.")
    expect(pat.locator("main")).to_contain_text("State published · live")
    snap(pat, "17-published")

    # 6. The Admin finds every step in the audit log, by who did it.
    admin.goto(f"{server}/governance/audit/")
    for who, codes in [
        (
            "admin",
            [
                "governance.user.invite",
                "governance.sso.map",
                "governance.policy.create",
                "governance.gate_datasets.set",
            ],
        ),
        (
            "erin",
            [
                "evaluations.dataset.create",
                "evaluations.dataset_version.create",
                "evaluations.case.create",
                "evaluations.case.import",
                "evaluations.check.create",
                "evaluations.dataset_version.freeze",
            ],
        ),
        (
            "bo",
            [
                "agents.agent.create",
                "agents.version.create",
                "evaluations.run.start",
                "governance.request.create",
            ],
        ),
        ("pat", ["governance.version.publish"]),
    ]:
        admin.fill("#audit-filters input[name=actor]", who)
        admin.click("#audit-filters button")
        expect(admin.locator("#audit-filters input[name=actor]")).to_have_value(who)
        shown = set(admin.locator("#audit-entries td:nth-child(4) code").all_inner_texts())
        assert set(codes) <= shown, (who, shown)
        snap(admin, f"18-audit-{who}")
    admin.fill("#audit-filters input[name=actor]", "")
    admin.fill("#audit-filters input[name=action]", "governance.role.grant")
    admin.click("#audit-filters button")
    expect(admin.locator("#audit-entries tr:has-text('erin')")).to_contain_text("sso")

    # 7. The outsider tries the same steps: every page says no, and why.
    otto.goto(f"{server}/runs/")
    expect(otto.locator("#no-runs")).to_contain_text(
        "You see no runs because your roles cover no agent"
    )
    assert "Publish" not in otto.inner_text("header nav")
    snap(otto, "19-outsider-runs")
    otto.goto(f"{server}/runs/start/")
    expect(otto.locator("main")).to_contain_text(
        "You may not start runs (Builder role on an agent needed)."
    )
    expect(otto.locator("#start-run")).to_have_count(0)
    snap(otto, "20-outsider-start-run")
    for path in [
        "/admin/evaluations/dataset/add/",
        "/admin/agents/agent/add/",
        "/admin/governance/publishingpolicy/add/",
        "/admin/governance/gatedataset/add/",
    ]:
        assert otto.goto(f"{server}{path}").status == 403
        expect(otto.locator("h1")).to_have_text("Not allowed")
        expect(otto.locator("#why")).to_contain_text("The admin is for people whose roles use it")
    snap(otto, "21-outsider-admin")
    assert otto.goto(publish_url).status == 404
    expect(otto.locator("main")).to_contain_text("No agent version found, or not visible to you.")
    snap(otto, "22-outsider-publish")
    assert otto.goto(f"{server}/people/").status == 403
    expect(otto.locator("#why")).to_have_text("Only an Admin manages people and their roles.")
    assert otto.goto(f"{server}/governance/audit/").status == 404
    snap(otto, "23-outsider-audit")
