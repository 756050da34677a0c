"""`manage.py seed_demo`: demo users, a demo agent with two versions, a dataset and a run.

Idempotent: running it again resets the demo passwords and adds only what is missing. The
completed run is executed in-process (no worker needs to be up yet).
"""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from django.db import transaction

from agents.actions.create_draft_version import CreateDraftVersion
from agents.models import Agent, Tool
from evaluations import engine
from evaluations.actions.freeze_dataset_version import FreezeDatasetVersion
from evaluations.actions.start_run import StartRun
from evaluations.choices import RunStatus
from evaluations.models import Case, CaseVersion, Check, Dataset, DatasetVersion, Run
from governance.choices import Role
from governance.models import PublishingPolicy

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

PASSWORD = "sherlock-{}"


class Command(BaseCommand):
    help = "Create the demo users, agent, dataset, policy and one completed run (idempotent)."

    def handle(self, *args, **options):
        users = self.seed_users()
        admin = users["admin"]
        with transaction.atomic():
            agent, versions = self.seed_agent(users["builder"])
            dataset_version = self.seed_dataset(users["editor"])
            self.seed_policy(admin, agent, dataset_version.dataset)
        run = Run.objects.filter(
            agent_version=versions[0],
            dataset_version=dataset_version,
            status=RunStatus.COMPLETED,
        ).first()
        if run is None:
            run = StartRun(
                acting_user=users["builder"],
                agent_version=versions[0],
                dataset_version=dataset_version,
                repetitions=2,
            ).execute()
            engine.run_shard(run.pk, list(run.trials.values_list("pk", flat=True)))
            run.refresh_from_db()
        self.stdout.write(
            f"Demo run #{run.pk}: {run.status}, {run.summary.get('passed')}/"
            f"{run.summary.get('cases')} cases passed"
        )
        self.stdout.write("Demo logins (user / password):")
        for username, role in DEMO_USERS:
            self.stdout.write(f"  {username:<10} {PASSWORD.format(username):<20} {role}")

    def seed_users(self):
        user_model = get_user_model()
        users = {}
        for username, role in DEMO_USERS:
            user, _ = user_model.objects.get_or_create(
                username=username, defaults={"email": f"{username}@example.com"}
            )
            user.is_staff = True
            user.set_password(PASSWORD.format(username))
            user.save()
            user.groups.add(Group.objects.get(name=role.value))
            users[username] = user_model.objects.get(pk=user.pk)  # fresh permission cache
        return users

    def seed_agent(self, builder):
        for name, effectful, high_impact in [
            ("kb.search", False, False),
            ("orders.lookup", False, False),
            ("refunds.create", True, False),
            ("accounts.delete", True, True),
        ]:
            Tool.objects.get_or_create(
                name=name, defaults={"effectful": effectful, "high_impact": high_impact}
            )
        agent, _ = Agent.objects.get_or_create(
            slug="support-bot",
            defaults={
                "name": "Support bot",
                "owner": builder,
                "description": "The demo support assistant (agents.demo.support_bot).",
            },
        )
        tools = list(Tool.objects.exclude(name="accounts.delete"))
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
        dataset, _ = Dataset.objects.get_or_create(
            slug="support-basics",
            defaults={
                "name": "Support basics",
                "owner": editor,
                "description": "Everyday support questions with the tools they need.",
            },
        )
        frozen = dataset.latest_frozen
        if frozen is not None:
            return frozen
        version, _ = DatasetVersion.objects.get_or_create(
            dataset=dataset, frozen_at=None, defaults={"number": 1, "note": "Demo cases"}
        )
        for position, (label, kind, params, threshold, mode) in enumerate(CHECKS):
            check = Check(
                dataset_version=version,
                label=label,
                kind=kind,
                params=params,
                threshold=threshold,
                mode=mode,
                position=position,
            )
            check.clean()
            check.save()
        for key, question, tools in CASES:
            case, _ = Case.objects.get_or_create(dataset=dataset, key=key)
            overrides = {}
            if isinstance(question, dict):
                overrides["Answer shape"] = {
                    "params": {"type": "json_schema", "schema": ANSWER_SCHEMA}
                }
            CaseVersion.objects.create(
                dataset_version=version,
                case=case,
                input=question,
                expected_tools=[{"name": name} for name in tools],
                tags=["json"] if isinstance(question, dict) else [],
                overrides=overrides,
            )
        return FreezeDatasetVersion(
            acting_user=editor, dataset_version=version, note="Demo cases"
        ).execute()

    def seed_policy(self, admin, agent, dataset):
        policy = PublishingPolicy.objects.filter(agent__isnull=True).first()
        if policy is None:
            policy = PublishingPolicy.objects.create(
                name="Default publishing policy",
                created_by=admin,
                repetitions=2,
                min_case_pass_rate=0.9,
            )
            policy.gate_datasets.add(dataset)
        return policy
