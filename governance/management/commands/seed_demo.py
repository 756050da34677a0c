"""`manage.py seed_demo`: demo users, three demo agents, datasets, policies and runs, each
telling one story of the publish gate through the real actions (docs/guide.md, "A tour"):

- `support-bot` on `support-basics`: v1 ("careful") passes every gate and `publisher`
  publishes it, with no bypass; v2 ("fast") skips the order lookup before refunding, so its
  case pass rate is under the policy's 0.9, and paired with the live v1 it regresses on the two
  refund cases. The bot's replies and refunds go to the demo ledger (`agents.demo`), read back
  by the outcome and effect verifiers, and its calls are billed.
- `support-faq`: five plain questions for the README's first run with the `sherlock` client.
- `refund-agent` on `refund-desk`: the release inversion: v2 ("fast") scores higher and costs
  less per run, yet fails at false success (it claimed a credit the tool policy refused);
  v1 ("stable") passes. The compare page puts their runs side by side.
- `help-answerer` on `help-centre` (`governance.demo`): a policy that decides on the interval;
  27 of 30 clear 0.85 by point estimate, not by interval: insufficient evidence.

It prints only where to look and the logins. Idempotent: running it again resets the demo
passwords and adds only what is missing. The runs are executed in-process.
"""

from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from agents import demo
from agents.actions.create_draft_version import CreateDraftVersion
from agents.choices import VersionState
from agents.models import Agent, Tool
from evaluations import engine
from evaluations.choices import RunStatus
from evaluations.verdict import INSUFFICIENT
from governance.actions.create_policy import CreatePolicy
from governance.actions.decide_publish_request import DecidePublishRequest
from governance.actions.grant_role import GrantRole
from governance.actions.publish_version import PublishVersion
from governance.actions.request_publication import RequestPublication
from governance.actions.set_gate_datasets import SetGateDatasets
from governance.choices import RequestState, Role, RoleScope
from governance.demo import completed_run, frozen_dataset, seed_help_centre
from governance.models import GateDataset, PublishingPolicy, PublishRequest, RoleGrant
from governance.people.roles import global_roles, materialize
from governance.publishing.decision import blocking_gate, outcome_of

SEED_REASON = "A persona of the demo (manage.py seed_demo)."

DEMO_USERS = [
    ("editor", Role.EDITOR),
    ("builder", Role.BUILDER),
    ("publisher", Role.PUBLISHER),
    ("admin", Role.ADMIN),
]

ANSWER_SCHEMA = {
    "type": "object",
    "required": ["answer", "topic"],
    "properties": {"answer": {"type": "string"}, "topic": {"type": ["string", "null"]}},
}

# key, question, expected tools; the outcome each case must leave in the ledger is the refund of
# order A-1001 for the refund questions, else the reply posted on the ticket with its topic
# (None: handed off to a person).
CASES = [
    (
        "refund-small",
        "Can I get a refund for my $40 order A-1001?",
        ["kb.search", "orders.lookup", "refunds.create"],
    ),
    ("shipping-time", "How long does shipping take?", ["kb.search"]),
    ("password-reset", "I forgot my password, what now?", ["kb.search"]),
    ("invoice-download", "Where do I download an invoice?", ["kb.search"]),
    ("cancel-plan", "How do I cancel my plan?", ["kb.search"]),
    ("address-change", "How do I change my billing address?", ["kb.search"]),
    (
        "refund-json",
        {"question": "Refund policy for order A-1001?"},
        ["kb.search", "orders.lookup", "refunds.create"],
    ),
    ("shipping-json", {"question": "What are the shipping options?"}, ["kb.search"]),
    ("express-shipping", "Is there express shipping?", ["kb.search"]),
    ("invoice-pdf", "Can I get my invoice as a PDF?", ["kb.search"]),
    ("unknown-topic", "Can you write me a poem about llamas?", []),
    ("cancel-access", "If I cancel, do I keep access?", ["kb.search"]),
]

CHECKS = [
    ("Answer shape", "output_type", {"type": "text"}, 1.0, "blocking"),
    ("Fast enough", "latency", {"max_ms": 2000}, 1.0, "blocking"),
    ("Expected tools", "tools_used", {"match": "in_order"}, 1.0, "blocking"),
    (
        "Never deletes accounts",
        "tools_used",
        {"tools": [{"name": "accounts.delete"}], "forbidden": True},
        1.0,
        "blocking",
    ),
]

# The support questions of `support-faq`, the README's first client run.
FAQ_CASES = ("shipping-time", "password-reset", "invoice-download", "cancel-plan", "address-change")

PASSWORD = "sherlock-{}"

# The support bot's tools: name, effectful, high impact, the ledger kind its effect verifier
# reads and the call arguments it matches (agents.demo.support_bot writes them).
SUPPORT_TOOLS = [
    ("kb.search", False, False, None, None),
    ("orders.lookup", False, False, None, None),
    ("refunds.create", True, False, "refund", ["order", "amount"]),
    ("tickets.reply", True, False, "reply", ["topic"]),
    ("accounts.delete", True, True, None, None),
]


def describe(request):
    """A publish request's outcome in a few words, for the printed summary."""
    if request.state == RequestState.PUBLISHED:
        by = request.published_by.get_username() if request.published_by else "?"
        bypassed = request.bypasses.filter(used_at__isnull=False).exists()
        return f"published by {by} " + ("with a bypass" if bypassed else "(gate passed, no bypass)")
    if request.state == RequestState.BLOCKED:
        if outcome_of(request.decision) == INSUFFICIENT:
            return (
                "blocked: insufficient evidence at the case pass rate (0.90 clears 0.85, its "
                "interval does not)"
            )
        return f"blocked at {blocking_gate(request.decision)}"
    return str(request.state)


class Command(BaseCommand):
    help = (
        "Create the demo users, agents, datasets, policies and runs; publish one version "
        "through the gate and leave one blocked (idempotent)."
    )

    def handle(self, *args, **options):
        users = self.seed_users()
        admin = users["admin"]
        with transaction.atomic():
            agent, versions = self.seed_agent(users["builder"])
            dataset_version = self.seed_dataset(users["editor"])
            self.seed_policy(admin, agent, dataset_version.dataset)
            self.seed_faq(users["editor"])
        completed_run(users["builder"], versions[0], dataset_version, repetitions=2)
        passed, blocked = (self.seed_publication(users, version) for version in versions[:2])
        if passed.state != RequestState.PUBLISHED:
            self.stderr.write(
                f"{passed.agent_version} was not published ({describe(passed)}): this database "
                "was seeded by an older demo; `make clean` and `make run` give the current one."
            )
        refund_runs = self.seed_refund_desk(users)
        undecided = self.seed_publication(users, seed_help_centre(users))
        self.stdout.write("Demo ready. Look at /runs/, and the publish pages:")
        for request in (passed, blocked, undecided):
            self.stdout.write(
                f"  /governance/versions/{request.agent_version_id}/  {request.agent_version}: "
                + describe(request)
            )
        self.stdout.write(
            f"  /runs/compare/?a={refund_runs[0].pk}&b={refund_runs[1].pk}  refund-agent v1 vs "
            "v2: v2 scores higher, yet fails at false success"
        )
        signed = passed.agent_version.attestations.count()
        self.stdout.write(
            f"  {passed.agent_version}'s publication is signed: its attestation is on its publish "
            "page, the public key at /.well-known/sherlock/attestation-keys.json"
            if signed
            else "  Releases are not signed (no SHERLOCK_ATTESTATION_KEY_FILE; see make run)."
        )
        self.stdout.write(
            "Logins: "
            + ", ".join(f"{name} ({role})" for name, role in DEMO_USERS)
            + ", password sherlock-<user>."
        )

    def seed_publication(self, users, version):
        """`version`'s publish request under the policy in force, made by `builder` through
        `RequestPublication`; its gate runs are executed here, the receiver decides, and a
        passed decision is published by `publisher` (`PublishVersion`, no bypass)."""
        request = PublishRequest.objects.current_for(version)
        if request is None:
            request = RequestPublication(
                acting_user=users["builder"], agent_version=version
            ).execute()
        for run in request.runs.exclude(status=RunStatus.COMPLETED):
            engine.run_shard(run.pk, list(run.trials.values_list("pk", flat=True)))
        # The `run_finished` receiver decides on commit; inside an outer transaction (a test)
        # that has not happened yet, so decide here too: the action is idempotent.
        DecidePublishRequest(publish_request_id=request.pk).execute()
        request.refresh_from_db()
        version.refresh_from_db()
        if request.state == RequestState.PASSED and version.state != VersionState.PUBLISHED:
            PublishVersion(
                acting_user=users["publisher"],
                agent_version=version,
                reason="The gate passed: demo publication.",
            ).execute()
            request.refresh_from_db()
        return request

    def seed_users(self):
        user_model = get_user_model()
        users = {}
        for username, _role in DEMO_USERS:
            user, _ = user_model.objects.get_or_create(
                username=username, defaults={"email": f"{username}@example.com"}
            )
            user.is_staff = True
            user.set_password(PASSWORD.format(username))
            user.save()
            users[username] = user
        admin = users["admin"]
        if Role.ADMIN not in global_roles(admin):
            # The first Admin has no Admin to grant it (like `createsuperuser`): the seed records
            # the grant and derives its membership itself, which the catch-all receiver audits
            # (`auth.membership.add`). Every other persona is granted by that Admin.
            RoleGrant.objects.create(
                user=admin, role=Role.ADMIN, scope=RoleScope.GLOBAL, reason=SEED_REASON
            )
            materialize(admin)
        for username, role in DEMO_USERS:
            if role.value not in global_roles(users[username]):
                GrantRole(
                    acting_user=admin, user=users[username], role=role.value, reason=SEED_REASON
                ).execute()
        return {name: user_model.objects.get(pk=user.pk) for name, user in users.items()}

    def seed_agent(self, builder):
        agent, _ = Agent.objects.get_or_create(
            slug="support-bot",
            defaults={
                "name": "Support bot",
                "owner": builder,
                "description": "The demo support assistant (agents.demo.support_bot).",
            },
        )
        # The demo's tools are its agents' own (an Admin shares tools only on purpose).
        for name, effectful, high_impact, kind, fields in SUPPORT_TOOLS:
            verifier = (
                {
                    "kind": "python",
                    "callable": "agents.demo.effect_in_ledger",
                    "params": {"kind": kind, "fields": fields},
                }
                if kind
                else {}
            )
            tool, _ = Tool.objects.get_or_create(
                agent=agent,
                name=name,
                defaults={"effectful": effectful, "high_impact": high_impact, "verifier": verifier},
            )
            if verifier and not tool.verifier:
                # A database seeded before the bot wrote to the ledger: give it its verifier.
                tool.verifier = verifier
                tool.save(update_fields=["verifier"])
        tools = list(agent.own_tools.exclude(name="accounts.delete"))
        for style, notes in [
            ("careful", "Stable: looks the order up before refunding."),
            ("fast", "Faster and terser; skips the order lookup."),
        ]:
            config = {"callable": "agents.demo.support_bot", "kwargs": {"style": style}}
            if not agent.versions.filter(config__kwargs__style=style).exists():
                CreateDraftVersion(
                    acting_user=builder,
                    agent=agent,
                    adapter="python",
                    config=config,
                    notes=notes,
                    tools=tools,
                ).execute()
        return agent, list(agent.versions.order_by("number"))

    def seed_dataset(self, editor):
        checks = [
            {"label": label, "kind": kind, "params": params, "threshold": threshold, "mode": mode}
            for label, kind, params, threshold, mode in CHECKS
        ]
        cases = []
        for key, question, tools in CASES:
            overrides: dict[str, Any] = {}
            if isinstance(question, dict):
                overrides["Answer shape"] = {
                    "params": {"type": "json_schema", "schema": ANSWER_SCHEMA}
                }
            if not tools:
                # Nothing to expect: the check does not apply here (rather than a skip that the
                # release gate would rightly count as "could not be scored").
                overrides["Expected tools"] = {"disabled": True}
            text = question["question"] if isinstance(question, dict) else question
            topic = demo.topic_of(text)
            outcome = (
                {"kind": "refund", "order": "A-1001", "amount": 40}
                if topic == "refund"
                else {"kind": "reply", "topic": topic}
            )
            cases.append(
                {
                    "key": key,
                    "input": question,
                    "outcome_check": {
                        "kind": "python",
                        "callable": "agents.demo.outcome_in_ledger",
                        "params": outcome,
                    },
                    "expected_tools": [{"name": name} for name in tools],
                    "tags": ["json"] if isinstance(question, dict) else [],
                    "overrides": overrides,
                }
            )
        return frozen_dataset(
            editor,
            slug="support-basics",
            name="Support basics",
            description="Everyday support questions with the tools they need.",
            note="Demo cases",
            checks=checks,
            cases=cases,
        )

    def seed_faq(self, editor):
        """`support-faq`: the README's first run from a team's own code. Plain questions and
        the checks a text answer can meet (its shape and its latency), no tools and no answer
        key: a task that answers in text and says what the call cost passes it."""
        checks = [
            {"label": label, "kind": kind, "params": params, "threshold": threshold, "mode": mode}
            for label, kind, params, threshold, mode in CHECKS[:2]
        ]
        cases = [
            {"key": key, "input": question, "tags": ["faq"]}
            for key, question, _ in CASES
            if isinstance(question, str) and key in FAQ_CASES
        ]
        return frozen_dataset(
            editor,
            slug="support-faq",
            name="Support FAQ",
            description="Plain support questions: a first run of your own code (README).",
            note="Demo cases for a first client run",
            checks=checks,
            cases=cases,
        )

    def seed_policy(self, admin, agent, dataset):
        """The global Default policy (no budget; verified outcomes not required: its choice,
        docs/contract.md; a candidate paired with the live version) and `support-basics`
        chosen as the bot's gate dataset: a global policy carries no dataset from one agent to
        another."""
        policy = PublishingPolicy.objects.filter(agent__isnull=True).order_by("-version").first()
        if policy is None:
            policy = CreatePolicy(
                acting_user=admin,
                name="Default publishing policy",
                repetitions=2,
                min_case_pass_rate=0.9,
                # A candidate is paired with the live version on the same cases: at most five
                # points lower (docs/contract.md, "Paired against the live version").
                max_regression=0.05,
            ).execute()
        if not GateDataset.objects.filter(agent=agent, dataset=dataset).exists():
            SetGateDatasets(acting_user=admin, agent=agent, datasets=[dataset]).execute()
        return policy

    # --- the refund desk ---------------------------------------------------------

    def seed_refund_desk(self, users):
        """Two versions of `refund-agent`, the `refund-desk` dataset, its policy and one
        completed run per version (returned, stable first)."""
        with transaction.atomic():
            agent, versions = self.seed_refund_agent(users["builder"])
            dataset_version = self.seed_refund_dataset(users["editor"])
            self.seed_refund_policy(users["admin"], agent, dataset_version.dataset)
        return [completed_run(users["builder"], v, dataset_version) for v in versions]

    def seed_refund_agent(self, builder):
        agent, _ = Agent.objects.get_or_create(
            slug="refund-agent",
            defaults={
                "name": "Refund agent",
                "owner": builder,
                "description": "The release-inversion demo agent (agents.demo.refund_agent).",
            },
        )
        tools = {}
        for name, effectful, high_impact, kind, fields, description in REFUND_TOOLS:
            verifier = (
                {
                    "kind": "python",
                    "callable": "agents.demo.effect_in_ledger",
                    "params": {"kind": kind, "fields": fields},
                }
                if kind
                else {}
            )
            tools[name], _ = Tool.objects.get_or_create(
                agent=agent,
                name=name,
                defaults={
                    "effectful": effectful,
                    "high_impact": high_impact,
                    "verifier": verifier,
                    "description": description,
                },
            )
        denied = [tools["billing.apply_credit"]]
        for style, notes in [
            ("stable", "Stable: looks up, writes, reads back; waits for approval above $100."),
            ("fast", "Faster and cheaper per run; skips the read-back and never waits."),
        ]:
            if not agent.versions.filter(config__kwargs__style=style).exists():
                CreateDraftVersion(
                    acting_user=builder,
                    agent=agent,
                    adapter="python",
                    config={
                        "callable": "agents.demo.refund_agent",
                        "kwargs": {"style": style, "deny": [t.name for t in denied]},
                    },
                    notes=notes,
                    tools=list(tools.values()),
                    denied_tools=denied,
                ).execute()
        return agent, list(agent.versions.order_by("number"))

    def seed_refund_dataset(self, editor):
        cases = []
        for key, task in demo.REFUND_DESK_TASKS.items():
            expected_fields = {
                name: task[name]
                for name in ("order", "amount", "contact", "city", "job", "recipient", "account")
                if name in task
            }
            cases.append(
                {
                    "key": key,
                    "input": {k: v for k, v in task.items() if k != "reference"},
                    "expected": {"output": task["reference"]},
                    "outcome_check": {
                        "kind": "python",
                        "callable": "agents.demo.outcome_in_ledger",
                        "params": {"kind": OUTCOME_KINDS[task["action"]], **expected_fields},
                    },
                    "tags": [task["action"]],
                }
            )
        return frozen_dataset(
            editor,
            slug="refund-desk",
            name="Refund desk",
            description="Tasks whose outcome is checked in the ledger.",
            note="The refund desk's tasks",
            checks=REFUND_CHECKS,
            cases=cases,
        )

    def seed_refund_policy(self, admin, agent, dataset):
        policy = PublishingPolicy.objects.filter(agent=agent).order_by("-version").first()
        if policy is None:
            policy = CreatePolicy(
                acting_user=admin,
                agent=agent,
                gate_datasets=[dataset],
                name="Refund desk policy",
                repetitions=1,
                min_case_pass_rate=0.9,
                max_cost_per_verified_outcome_usd=Decimal("0.60"),
            ).execute()
        return policy


# name, effectful, high impact, ledger kind its effect verifier reads, call arguments it
# matches, description
REFUND_TOOLS = [
    ("orders.lookup", False, False, None, None, "Look an order up (read-only)."),
    ("payments.refund", True, False, "refund", ["order", "amount"], "Refund an order."),
    ("crm.update_contact", True, False, "address", ["contact", "city"], "Update a contact."),
    ("scheduler.create_job", True, False, "job", ["job", "recipient"], "Schedule a job."),
    ("approvals.create_request", True, False, "approval", ["account", "amount"], "Ask a human."),
    ("billing.apply_credit", True, True, "credit", ["account", "amount"], "Credit an account."),
]
OUTCOME_KINDS = {"refund": "refund", "address": "address", "schedule": "job", "credit": "credit"}
REFUND_CHECKS = [
    {
        # Task quality. An offline overlap with the reference answer stands in for a
        # model rubric, so the demo needs no judge; it is the run's quality grader.
        "label": "Task quality",
        "kind": "answer_relevance_overlap",
        "params": {},
        "threshold": None,
        "mode": "informative",
        "quality_grader": True,
    },
    {
        "label": "Answer shape",
        "kind": "output_type",
        "params": {"type": "text"},
        "threshold": 1.0,
        "mode": "blocking",
    },
]
