"""The demo's building blocks, for `manage.py seed_demo`: a frozen dataset built through the
actions (`frozen_dataset`), a completed run (`completed_run`), and the help centre, whose
policy decides on the interval (`seed_help_centre`)."""

from django.db import transaction

from agents import demo
from agents.actions.create_draft_version import CreateDraftVersion
from agents.models import Agent, Tool
from evaluations import engine
from evaluations.actions.create_check import CreateCheck
from evaluations.actions.create_dataset import CreateDataset
from evaluations.actions.create_draft_dataset_version import CreateDraftDatasetVersion
from evaluations.actions.freeze_dataset_version import FreezeDatasetVersion
from evaluations.actions.import_cases import ImportCases
from evaluations.actions.start_run import StartRun
from evaluations.choices import RunPurpose, RunStatus
from evaluations.models import Dataset, Run
from governance.actions.create_policy import CreatePolicy
from governance.choices import RateDecision
from governance.models import PublishingPolicy


def frozen_dataset(editor, *, slug, name, description, note, checks, cases):
    """The dataset's latest frozen version, or a first one built and frozen by `editor` through
    the same actions as the admin and the API (validated and audited)."""
    dataset = (
        Dataset.objects.filter(slug=slug).first()
        or CreateDataset(
            acting_user=editor, slug=slug, name=name, description=description
        ).execute()
    )
    frozen = dataset.latest_frozen
    if frozen is not None:
        return frozen
    draft = (
        dataset.versions.filter(frozen_at__isnull=True).first()
        or CreateDraftDatasetVersion(acting_user=editor, dataset=dataset, note=note).execute()
    )
    existing_checks = set(draft.checks.values_list("label", flat=True))
    for position, fields in enumerate(checks):
        if fields["label"] not in existing_checks:
            CreateCheck(
                acting_user=editor, dataset_version=draft, position=position, **fields
            ).execute()
    existing_cases = set(draft.case_versions.values_list("case__key", flat=True))
    new = [fields for fields in cases if fields["key"] not in existing_cases]
    if new:  # one import (bulk writes, one audit entry), not a verb per case
        ImportCases(acting_user=editor, dataset=dataset, cases=new).execute()
    return FreezeDatasetVersion(acting_user=editor, dataset_version=draft, note=note).execute()


def completed_run(builder, version, dataset_version, repetitions=1):
    """The version's completed ad-hoc run on `dataset_version`, or a new one started by
    `builder` (`StartRun`) and executed in-process."""
    run = Run.objects.filter(
        agent_version=version,
        dataset_version=dataset_version,
        status=RunStatus.COMPLETED,
        purpose=RunPurpose.ADHOC,
    ).first()
    if run is None:
        run = StartRun(
            acting_user=builder,
            agent_version=version,
            dataset_version=dataset_version,
            repetitions=repetitions,
        ).execute()
        engine.run_shard(run.pk, list(run.trials.values_list("pk", flat=True)))
        run.refresh_from_db()
    return run


def seed_help_centre(users):
    """`help-answerer` v1 and its gate dataset of 30 questions, under a policy that
    decides its case pass rate (0.85) on the interval: 27 of 30 pass, and its publish
    request has insufficient evidence. Returns the version."""
    with transaction.atomic():
        agent, _ = Agent.objects.get_or_create(
            slug="help-answerer",
            defaults={
                "name": "Help centre answerer",
                "owner": users["builder"],
                "description": "Answers from the knowledge base (agents.demo.help_answerer).",
            },
        )
        search, _ = Tool.objects.get_or_create(agent=agent, name="kb.search")
        if not agent.versions.exists():
            CreateDraftVersion(
                acting_user=users["builder"],
                agent=agent,
                adapter="python",
                config={"callable": "agents.demo.help_answerer"},
                notes="Looks answers up, except on returns.",
                tools=[search],
            ).execute()
        dataset_version = frozen_dataset(
            users["editor"],
            slug="help-centre",
            name="Help centre",
            description="Thirty help-centre questions, each answered from the knowledge base.",
            note="The help centre's questions",
            checks=[
                {
                    "label": "Looks it up",
                    "kind": "tools_used",
                    "params": {"match": "in_order"},
                    "threshold": 1.0,
                    "mode": "blocking",
                }
            ],
            cases=[
                {"key": f"q{n:02d}", "input": question, "expected_tools": ["kb.search"]}
                for n, question in enumerate(demo.HELP_QUESTIONS, start=1)
            ],
        )
        if not PublishingPolicy.objects.filter(agent=agent).exists():
            CreatePolicy(
                acting_user=users["admin"],
                agent=agent,
                gate_datasets=[dataset_version.dataset],
                name="Help centre policy (on the interval)",
                repetitions=1,
                min_case_pass_rate=0.85,
                case_pass_rate_decides_on=RateDecision.INTERVAL,
                min_useful_progress=None,
                min_tool_effect_integrity=None,
            ).execute()
    return agent.versions.get(number=1)
