"""`import_transcripts AGENT FILE --user U`: a `replay` draft version from a JSONL file.

Each line is `{"case_id": "...", "transcript": {...}}`, optionally with `"repetition": n`
(docs/adapters.md). The draft is created through CreateDraftVersion, so the user needs the
Builder role for the agent and the creation is audited; a bad line stops with its number.
"""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from agents.actions.create_draft_version import CreateDraftVersion
from agents.adapters.replay import read_jsonl
from agents.models import Agent
from sherlock.core.errors import ActionError


class Command(BaseCommand):
    help = "Create a replay draft version of an agent from recorded transcripts (JSONL)."

    def add_arguments(self, parser):
        parser.add_argument("agent", help="the agent's slug")
        parser.add_argument("file", help="JSONL: one {case_id, transcript} object a line")
        parser.add_argument("--user", required=True, help="who imports (a Builder of the agent)")
        parser.add_argument("--notes", default="", help="the version's notes")

    def handle(self, *args, **options):
        agent = Agent.objects.filter(slug=options["agent"]).first()
        if agent is None:
            raise CommandError(f"no agent {options['agent']!r}")
        user = get_user_model().objects.filter(username=options["user"]).first()
        if user is None:
            raise CommandError(f"no user {options['user']!r}")
        try:
            with open(options["file"], encoding="utf-8") as lines:
                config = read_jsonl(lines)
        except (OSError, ValueError) as exc:
            raise CommandError(f"{options['file']}: {exc}") from None
        try:
            version = CreateDraftVersion(
                acting_user=user,
                agent=agent,
                adapter="replay",
                config=config,
                notes=options["notes"] or f"replay of {options['file']}",
            ).execute()
        except ActionError as exc:
            raise CommandError(str(exc)) from None
        cases = len(config["transcripts"])
        self.stdout.write(f"{version}: replay of {cases} case(s)")
