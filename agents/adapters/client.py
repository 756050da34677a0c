"""`client`: the agent's code runs on the team's machines; Sherlock receives its transcripts.

A team whose agent lives in its own repository runs it with the `sherlock` client (docs/
client.md): the client fetches a run's work items, calls the team's function on each and
uploads one transcript (or the error it met) per case and repetition. Sherlock never calls
the agent: a run of a `client` version starts `waiting` for those uploads, and when the client
finishes it the workers score the uploaded answers with the same engine, checks, judge and
verifiers as any run (evaluations.engine.trials reads a client trial's answer from its upload
instead of calling the agent).

Config, all optional: `{"repository": "https://...", "entrypoint": "package.module:function",
"model": "..."}`: where the code lives and which function the client calls, shown with the
version; `model` prices the transcripts' token usage when a transcript names no model.
`validate_transcript` is the one reading of an uploaded transcript's shape (docs/checks.md
"The transcript"), so a bad upload is refused naming its field before anything is stored.
"""

from agents.adapters.base import AgentCallError, PreparedAgent
from sherlock.core.transcripts import check_figures, read_calls

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "repository": {"type": "string", "minLength": 1, "maxLength": 2000},
        "entrypoint": {
            "type": "string",
            # package.module:function (dotted names on both sides of the colon)
            "pattern": r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*"
            r":[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$",
            "maxLength": 300,
        },
        "model": {"type": "string", "minLength": 1},
    },
}

# What an error item's `kind` may say, and how the trial's error reads.
ERROR_KINDS = {
    "raised": "the function raised on the client",
    "timeout": "the function timed out on the client",
    "invalid": "the function returned no valid transcript on the client",
}
NEVER_RETURNED = "never returned by the client"


def validate(config):
    repository = config.get("repository")
    if repository is not None and not repository.startswith(("https://", "http://")):
        raise ValueError("config.repository: must be an http(s) URL")


def error_text(kind, message):
    """The trial's error for an error item the client uploaded."""
    return f"{ERROR_KINDS[kind]}: {message}" if message else ERROR_KINDS[kind]


def validate_transcript(transcript, where="transcript"):
    """Raise ValueError("<where>.<field>: <problem>") unless `transcript` has the documented
    shape: an object whose known keys have their documented types (`output` may be any JSON;
    other keys are kept as they are, as an adapter's are)."""
    if not isinstance(transcript, dict):
        raise ValueError(f"{where}: must be an object")
    if "tool_calls" in transcript:
        calls = transcript["tool_calls"]
        if not isinstance(calls, list):
            raise ValueError(f"{where}.tool_calls: must be a list of tool calls")
        for index, call in enumerate(calls):
            try:
                read_calls([call], "tool_calls")
            except ValueError as exc:
                raise ValueError(f"{where}.tool_calls[{index}]: {exc}") from None
    contexts = transcript.get("contexts")
    if contexts is not None and not isinstance(contexts, list):
        raise ValueError(f"{where}.contexts: must be a list")
    check_figures(transcript, where)
    model = transcript.get("model")
    if model is not None and not isinstance(model, str):
        raise ValueError(f"{where}.model: must be a string")
    complete = transcript.get("declared_complete")
    if complete is not None and not isinstance(complete, bool):
        raise ValueError(f"{where}.declared_complete: must be true, false or null")
    return transcript


class ClientAgent(PreparedAgent):
    """A `client` version as the engine holds it: never called. The engine scores what the
    client uploaded for each trial (evaluations.engine.trials); a call here is a bug."""

    def __init__(self, version):
        self.model = version.config.get("model")

    def _call(self, case, repetition):
        raise AgentCallError(
            "a client agent's code runs on the team's machines: Sherlock never calls it "
            "(its transcripts are uploaded, docs/client.md)"
        )
