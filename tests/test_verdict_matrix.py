"""One verdict per run and policy, through every surface.

A matrix of policies (no budget, a budget, floors off, verified outcomes required, coverage
not required) and runs (with outcome verifiers, a question-answering dataset without them, a
blocking model check no judge could score, a trial in error, a trial in error beside a
completed trial without its bill) goes through every surface that shows a verdict: the exit
code of `manage.py evaluate` (which starts the run, with the real engine), the run page's HTML,
the run list, `GET /api/v1/runs/compare/`, `GET /api/v1/runs/{id}/verdict/` and the publish
gate's decision (`governance.publishing.decision.decide`). Each must give the outcome the table
below says, and the same gates, because they all call `evaluations.verdict`.
"""

import re
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agents.models import Tool
from evaluations.models import Run
from evaluations.verdict.cases import cases_unscored
from governance.models import PublishingPolicy
from governance.publishing.decision import decide
from tests.support import factories
from tests.support.governance import api_client

LEDGER = []
VERIFIER = {"kind": "python", "callable": "tests.test_verdict_matrix.landed"}
HERE = "tests.test_verdict_matrix"


def acting_agent(case, **_):
    """Refunds (an effect, verified at the destination), says so, bills, shows progress; a case
    whose input asks it to fail raises (a trial in error)."""
    if case["input"].get("fail"):
        raise RuntimeError("the refund service is down")
    amount = case["input"]["amount"]
    LEDGER.append(amount)
    return {
        "output": f"Refunded ${amount}.",
        "declared_complete": True,
        "tool_calls": [{"id": f"r{amount}", "name": "pay.refund", "arguments": {"amount": amount}}],
        "windows": [{"evidence_delta": "refund row"}],
        # A case whose input says so completes without reporting its bill (missing cost).
        **({} if case["input"].get("unbilled") else {"cost_usd": 0.01}),
    }


def answering_agent(case, **_):
    """A question-answering agent: no tools, no external effect, an answer and its bill."""
    return {
        "output": f"The answer to {case['input']['q']}.",
        "declared_complete": True,
        "cost_usd": 0.01,
    }


def landed(context):
    call = context.get("call") or {}
    amount = call.get("arguments", {}).get("amount") or context["case"]["input"].get("amount")
    return amount in LEDGER


EXACT = {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}
TOOLS = {"label": "Tools", "kind": "tools_used", "params": {"match": "any_order"}, "threshold": 1.0}
MODEL = {"label": "Polite", "kind": "custom", "params": {"criterion": "polite"}, "mode": "blocking"}

POLICIES = {
    "no budget": {},
    "a budget": {"max_cost_per_verified_outcome_usd": Decimal("0.60")},
    "floors off": {"min_useful_progress": None, "min_tool_effect_integrity": None},
    "outcomes required": {"requires_verified_outcomes": True},
    "coverage off": {"coverage_required": False},
}

# run kind -> policy -> (outcome, exit code, the first failing gate or None)
EXPECTED = {
    "verified": {
        "no budget": ("passed", 0, None),
        "a budget": ("passed", 0, None),
        "floors off": ("passed", 0, None),
        "outcomes required": ("passed", 0, None),
        "coverage off": ("passed", 0, None),
    },
    "no verifier": {
        "no budget": ("passed", 0, None),
        "a budget": ("failed", 1, "budget"),
        "floors off": ("passed", 0, None),
        "outcomes required": ("failed", 1, "coverage"),
        "coverage off": ("passed", 0, None),
    },
    "unscored model check": {
        "no budget": ("incomplete", 2, "checks_scored"),
        "a budget": ("failed", 1, "budget"),
        "floors off": ("incomplete", 2, "checks_scored"),
        "outcomes required": ("failed", 1, "coverage"),
        "coverage off": ("incomplete", 2, "checks_scored"),
    },
    # A trial in error has no billed cost: coverage fails closed (its cost is unknown), and the
    # checks-scored gate names the trial (its case has no verdict: unscored, outside the case
    # pass rate, which is why that gate exists). The missing cost
    # is the missing evidence of the error itself, not a failure: incomplete, exit 2, under
    # every policy (unavailable is never turned into a failure).
    "errored trial": {
        "no budget": ("incomplete", 2, "coverage"),
        "a budget": ("incomplete", 2, "coverage"),
        "floors off": ("incomplete", 2, "coverage"),
        "outcomes required": ("incomplete", 2, "coverage"),
        "coverage off": ("incomplete", 2, "checks_scored"),
    },
    # ... but a completed trial without its bill fails coverage on its own: failed, whatever
    # the trial in error beside it (unless the policy does not require coverage).
    "errored and unbilled": {
        "no budget": ("failed", 1, "coverage"),
        "a budget": ("failed", 1, "coverage"),
        "floors off": ("failed", 1, "coverage"),
        "outcomes required": ("failed", 1, "coverage"),
        "coverage off": ("incomplete", 2, "checks_scored"),
    },
}
# What each kind lacks, whatever the policy (a trial in error lacks everything: the
# checks-scored gate names it; billing is what a completed trial without its bill lacks).
MISSING = {
    "verified": set(),
    "no verifier": {"outcome_verification"},
    "unscored model check": {"outcome_verification", "judge"},
    # A trial in error names the agent: its adapter, its callable and the error.
    "errored trial": {"agent"},
    "errored and unbilled": {"agent", "billing"},
}


def dataset_for(kind):
    dataset = factories.dataset(kind.replace(" ", "-"))
    if kind in ("verified", "errored trial", "errored and unbilled"):
        case = {"expected_tools": [{"name": "pay.refund"}], "outcome_check": VERIFIER}
        cases = [("small", {"amount": 40}, case), ("medium", {"amount": 30}, case)]
        if kind != "verified":
            cases.append(("down", {"amount": 20, "fail": True}, case))
        if kind == "errored and unbilled":
            cases.append(("unbilled", {"amount": 10, "unbilled": True}, case))
        return factories.dataset_version(dataset, cases=cases, checks=[TOOLS])
    checks = [EXACT, MODEL] if kind == "unscored model check" else [EXACT]
    return factories.dataset_version(
        dataset,
        cases=[("capital", {"q": "the capital"}, {}), ("sum", {"q": "the sum"}, {})],
        checks=checks,
    )


def evaluate(*args):
    out = StringIO()
    try:
        call_command("evaluate", *args, stdout=out)
    except SystemExit as exit_:
        return exit_.code, out.getvalue()
    except CommandError as error:
        return error.returncode, f"{out.getvalue()}{error}"
    return 0, out.getvalue()


@pytest.fixture
def world(settings, live_db, builder):
    settings.SHERLOCK_JUDGE_BASE_URL = ""  # the model check cannot be scored
    settings.SHERLOCK_VERIFIER_CALLABLES = [
        *settings.SHERLOCK_VERIFIER_CALLABLES,
        VERIFIER["callable"],
    ]
    LEDGER.clear()
    Tool.objects.create(name="pay.refund", effectful=True, verifier=VERIFIER)
    return builder


def page_verdict(client, run):
    html = client.get(f"/runs/{run.pk}/").content.decode()
    found = re.search(r'id="verdict"[^>]*data-outcome="(\w+)" data-exit-code="(\w+)"', html)
    assert found, html[:2000]
    return found.group(1), int(found.group(2)), html


def list_verdict(client, run):
    html = client.get("/runs/").content.decode()
    row = re.search(rf"<tr[^>]*>(?:(?!</tr>).)*?/runs/{run.pk}/(?:(?!</tr>).)*</tr>", html, re.S)
    assert row, html[:2000]
    return re.search(r'data-verdict="(\w+)"', row.group(0)).group(1)


def page_gate_cell(html):
    """The run page's contract table: its last cell, the gate."""
    row = re.search(r'id="contract">.*?<tbody><tr>(.*?)</tr>', html, re.S)
    assert row, html[:2000]
    return re.findall(r'<span class="status \w+">([^<]*)</span>', row.group(1))[-1]


def gate_word(cell):
    """The outcome a gate cell reads: "pass", "fail (...)", "incomplete (...)"."""
    word = cell.split(" ")[0]
    return {"pass": "passed", "fail": "failed"}.get(word, word)


@pytest.mark.parametrize("kind", list(EXPECTED))
def test_every_surface_gives_the_same_verdict_for_each_policy(world, client, kind):
    builder = world
    agent = factories.agent(f"agent-{kind.replace(' ', '-')}")
    answers = kind in ("no verifier", "unscored model check")
    factories.agent_version(
        agent, callable_path=f"{HERE}.{'answering_agent' if answers else 'acting_agent'}"
    )
    dataset_version = dataset_for(kind)
    client.force_login(builder)
    api = api_client(builder)

    for number, (name, fields) in enumerate(POLICIES.items(), start=1):
        policy = PublishingPolicy.objects.create(
            name=name, agent=agent, version=number, min_case_pass_rate=1.0, **fields
        )
        outcome, exit_code, first = EXPECTED[kind][name]
        where = f"{kind} under {name}"

        code, out = evaluate(
            agent.slug, "--dataset", dataset_version.dataset.slug, "--user", "builder"
        )
        assert code == exit_code, f"{where}: evaluate\n{out}"
        run = Run.objects.select_related("agent_version__agent", "dataset_version__dataset").latest(
            "pk"
        )
        assert run.status == "completed", where
        # The count of cases with an unscored blocking result the run's end stored is the one
        # counted over its check results (what the verdict read before it was stored).
        stored = run.summary["cases_unscored"]
        legacy = Run(pk=run.pk, summary={**run.summary, "cases_unscored": None})
        assert cases_unscored([legacy]).get(run.pk, 0) == stored, where
        assert stored > 0 or kind not in ("unscored model check", "errored trial"), where

        shown = page_verdict(client, run)
        assert shown[:2] == (outcome, exit_code), f"{where}: run page"
        # The contract table's gate cell is the verdict's: never "pass" beside an incomplete
        # or failed verdict.
        assert gate_word(page_gate_cell(shown[2])) == outcome, f"{where}: run page gate cell"
        card = re.search(r'id="gate-card">.*?<b>([^<]*)</b>', shown[2], re.S)
        assert card and gate_word(card.group(1)) == outcome, f"{where}: run page gate card"
        assert list_verdict(client, run) == outcome, f"{where}: run list"

        body = api.get(f"/api/v1/runs/{run.pk}/verdict/").json()
        assert (body["outcome"], body["exit_code"]) == (outcome, exit_code), f"{where}: API"
        assert body["policy"] == {"id": policy.pk, "name": name}
        failing = [gate["name"] for gate in body["gates"] if gate["state"] == "fail"]
        assert (failing[0] if failing else None) == first, f"{where}: {body['gates']}"
        assert {item["code"] for item in body["missing"]} == MISSING[kind], where
        assert all(item["fix"] and item["docs"].startswith("/") for item in body["missing"])
        for item in body["missing"]:
            if item["code"] == "agent":
                assert f"the agent (python {HERE}.acting_agent)" in item["detail"], where
                assert "the refund service is down" in item["detail"], where
        assert not any(
            gate["name"] == "budget" and gate["state"] == "fail"
            for gate in body["gates"]
            if policy.max_cost_per_verified_outcome_usd is None
        ), f"{where}: fails at budget with no budget set"

        compared = api.get(f"/api/v1/runs/compare/?a={run.pk}&b={run.pk}").json()
        for side in ("a", "b"):
            assert compared[side]["verdict"]["outcome"] == outcome, f"{where}: compare"
            assert compared[side]["verdict"]["gates"] == body["gates"], f"{where}: compare"
        for row in compared["table"]:
            assert gate_word(row["gate"]) == outcome, f"{where}: compare API gate cell"
        assert f"| {compared['table'][0]['gate']} |" in compared["markdown"], where
        page = client.get(f"/runs/compare/?a={run.pk}&b={run.pk}")
        assert page.context["verdicts"][1].outcome == outcome
        [(_, left, right)] = [row for row in page.context["measures"] if row[0] == "gate"]
        assert gate_word(left) == gate_word(right) == outcome, f"{where}: compare page gate"

        decision = decide([run], policy)
        assert decision["release"] == ("pass" if outcome == "passed" else "fail"), where
        assert decision["verdict"]["outcome"] == outcome, f"{where}: gate"
        assert decision["first_failing_gate"] == first, f"{where}: gate"
        assert [(g["name"], g["status"]) for g in decision["gates"]] == [
            (g["name"], g["state"]) for g in body["gates"]
        ], f"{where}: gate and API disagree"

        # The verdict under a named policy is the gate's under that policy.
        other = PublishingPolicy.objects.filter(agent=agent, version=1).get()
        named = api.get(f"/api/v1/runs/{run.pk}/verdict/?policy={other.pk}").json()
        assert named["outcome"] == decide([run], other)["verdict"]["outcome"], where


def test_a_dataset_without_outcome_verifiers_reads_what_it_lacks_and_how_to_add_it(world, client):
    """The QA dataset under the policy that sets no budget: passed, never "fails at budget",
    coverage not "pass" while nothing was verified, and the page says what to add."""
    agent = factories.agent("qa-bot")
    factories.agent_version(agent, callable_path=f"{HERE}.answering_agent")
    dataset_version = dataset_for("no verifier")
    PublishingPolicy.objects.create(name="Default", agent=agent, version=1, min_case_pass_rate=1.0)
    code, out = evaluate(agent.slug, "--dataset", dataset_version.dataset.slug, "--user", "builder")
    assert code == 0, out
    assert "missing: 2 of 2 declared completions have no verified outcome" in out
    run = Run.objects.latest("pk")
    client.force_login(world)
    outcome, _, html = page_verdict(client, run)
    assert outcome == "passed"
    assert "fails at budget" not in html and "seed 003" not in html and "DESIGN" not in html
    assert re.search(r'<span class="status na">n/a</span> 1\. coverage: 2 of 2 declared', html)
    assert "Add an outcome verifier (outcome_check) to the dataset&#x27;s cases" in html
    assert "/admin/evaluations/check/docs/contract/#a-dataset-without-outcome-verifiers" in html
    assert "«requires verified outcomes»" in html


def test_the_verdict_api_refuses_a_policy_that_is_not_one_and_hides_runs(world, outsider):
    agent = factories.agent("qa-bot")
    version = factories.agent_version(agent, callable_path=f"{HERE}.answering_agent")
    run = Run.objects.create(
        agent_version=version, dataset_version=dataset_for("no verifier"), status="running"
    )
    api = api_client(world)
    pending = api.get(f"/api/v1/runs/{run.pk}/verdict/").json()
    assert (pending["outcome"], pending["exit_code"], pending["gates"]) == ("pending", None, [])
    for raw in ("x", "999999", "9223372036854775808"):
        refused = api.get(f"/api/v1/runs/{run.pk}/verdict/?policy={raw}")
        assert refused.status_code == 400, raw
        assert refused.json()["code"] == "invalid" and refused.json()["field"] == "policy"
    assert api_client(outsider).get(f"/api/v1/runs/{run.pk}/verdict/").status_code == 404
