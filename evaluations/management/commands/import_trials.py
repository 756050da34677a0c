"""`manage.py import_trials AGENT VERSION FILE [--dataset SLUG] [--variant NAME] [--thresholds]`.

Stores the trial records of FILE (JSON Lines, a JSON array or
``{"thresholds", "trials"}``) as a completed external run of the agent version, atomically
(``ImportTrials``), then prints the run's five-metric contract, computed from the database as
for any run. The contract uses the file's thresholds when it has them, else the default
thresholds. Bad input exits with status 2 and one line naming the record (``line 4``); nothing
is saved.
"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from agents.models import AgentVersion
from evaluations.actions.import_trials import ImportTrials
from evaluations.contract import ContractInputError, load_document, render_table
from evaluations.contract.runs import run_contract
from evaluations.models import Dataset
from sherlock.core.errors import ActionError

INPUT_ERROR = 2


class Command(BaseCommand):
    help = "Import trial records (the trial-record format) as an external run of an agent version."

    def add_arguments(self, parser):
        parser.add_argument("agent", help="the agent's slug")
        parser.add_argument("version", type=int, help="the agent version's number")
        parser.add_argument("file", help="trial records: JSON Lines or {thresholds, trials}")
        parser.add_argument(
            "--dataset",
            help="match each record's task to a case of this dataset's latest frozen version "
            "(default: the agent's external-<agent> dataset, extended as needed)",
        )
        parser.add_argument("--variant", help="import only this variant of a multi-variant file")

    def handle(self, *args, agent, version, file, dataset=None, variant=None, **options):

        agent_version = (
            AgentVersion.objects.select_related("agent")
            .filter(agent__slug=agent, number=version)
            .first()
        )
        if agent_version is None:
            raise CommandError(f"no version {version} of agent {agent!r}", returncode=INPUT_ERROR)
        dataset_obj = None
        if dataset is not None:
            dataset_obj = Dataset.objects.filter(slug=dataset).first()
            if dataset_obj is None:
                raise CommandError(f"no dataset {dataset!r}", returncode=INPUT_ERROR)
        try:
            text = Path(file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read {file}: {exc}", returncode=INPUT_ERROR) from None

        try:
            run = ImportTrials(
                acting_user=None,
                agent_version=agent_version,
                text=text,
                dataset=dataset_obj,
                variant=variant,
            ).execute()
        except ActionError as exc:
            raise CommandError(
                f"{file}: {exc} (nothing imported)", returncode=INPUT_ERROR
            ) from None

        try:
            thresholds = load_document(text).thresholds
            result = run_contract(run, thresholds)
        except ContractInputError as exc:
            raise CommandError(f"{file}: {exc}", returncode=INPUT_ERROR) from None
        self.stdout.write(
            f"Imported {run.trials_total} trial(s) as run #{run.pk} "
            f"({agent_version} on {run.dataset_version})"
        )
        self.stdout.write(render_table([result]))
