"""Choices of the agents app, and the allowed version transitions (declared once, here)."""

from django.db import models

from sherlock.core.states import StateMachine


class VersionState(models.TextChoices):
    DRAFT = "draft", "draft"
    PUBLISHED = "published", "published"
    RETIRED = "retired", "retired"


# A retired version may be published again: that is a rollback.
VERSION_TRANSITIONS = {
    VersionState.DRAFT: {VersionState.PUBLISHED},
    VersionState.PUBLISHED: {VersionState.RETIRED},
    VersionState.RETIRED: {VersionState.PUBLISHED},
}
# The one writer of `AgentVersion.state` after creation: publishing, retiring, rolling back.
VERSION_STATES = StateMachine("AgentVersion", "state", VERSION_TRANSITIONS)


class Adapter(models.TextChoices):
    PYTHON = "python", "Python callable"
    HTTP = "http", "HTTP endpoint"
    OPENAI_CHAT = "openai_chat", "OpenAI-compatible chat loop"
    REPLAY = "replay", "Replay of recorded transcripts"
    # The agent's code runs on the team's machines (the `sherlock` client); Sherlock receives
    # its transcripts and scores them (agents.adapters.client, docs/client.md).
    CLIENT = "client", "Runs on the client (transcripts uploaded)"
