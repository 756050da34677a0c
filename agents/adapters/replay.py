"""`replay`: transcripts recorded elsewhere (another harness, production traces), scored here.

Config `{"transcripts": {"<case id>": [transcript, ...]}}`: repetition r of a case replays the
r-th recorded transcript. A case or repetition with nothing recorded is an agent error, never a
reuse of another repetition's transcript (repetitions must be independent). Build the config
from a JSONL file with `read_jsonl`, or `manage.py import_transcripts`: one object a line,
`{"case_id": "...", "transcript": {...}}`, with an optional `"repetition": n` (else the lines of
a case are its repetitions in file order). Recorded `latency_ms` is kept; nothing is measured.
"""

import copy
import json
from typing import Any

from agents.adapters.base import AgentCallError, PreparedAgent, checked_figures

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["transcripts"],
    "properties": {
        "transcripts": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {
                "anyOf": [{"type": "object"}, {"type": "array", "items": {"type": "object"}}]
            },
        },
        "model": {
            "type": "string",
            "minLength": 1,
            "description": "The model that produced the transcripts, to price them (optional).",
        },
    },
}


def validate(config):
    pass


def read_jsonl(lines):
    """`{"transcripts": ...}` from JSONL lines; ValueError naming the line at fault."""
    recorded: dict[str, Any] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"line {number}: not JSON ({exc})") from None
        if not isinstance(row, dict):
            raise ValueError(f"line {number}: expected an object")
        case_id, transcript = row.get("case_id"), row.get("transcript")
        if not isinstance(case_id, str) or not case_id:
            raise ValueError(f"line {number}: case_id is required (a string)")
        if not isinstance(transcript, dict):
            raise ValueError(f"line {number}: transcript is required (an object)")
        repetitions = recorded.setdefault(case_id, {})
        repetition = row.get("repetition", len(repetitions) + 1)
        if not isinstance(repetition, int) or isinstance(repetition, bool) or repetition < 1:
            raise ValueError(f"line {number}: repetition must be an integer >= 1")
        if repetition in repetitions:
            raise ValueError(f"line {number}: case {case_id!r} repetition {repetition} repeated")
        repetitions[repetition] = transcript
    if not recorded:
        raise ValueError("no transcripts in the file")
    transcripts = {}
    for case_id, repetitions in recorded.items():
        expected = list(range(1, len(repetitions) + 1))
        if sorted(repetitions) != expected:
            raise ValueError(f"case {case_id!r}: repetitions must be 1..n without gaps")
        transcripts[case_id] = [repetitions[r] for r in expected]
    return {"transcripts": transcripts}


class ReplayAgent(PreparedAgent):
    def __init__(self, version):
        self.transcripts = version.config["transcripts"]
        self.model = version.config.get("model")

    def call(self, case, *, repetition=1):
        # No measured latency: the time it takes to look up a recording says nothing. The
        # recording's figures are checked as any agent's answer is.
        return checked_figures(self._call(case, repetition))

    def _call(self, case, repetition):
        recorded = self.transcripts.get(case.get("id"))
        if recorded is None:
            raise AgentCallError(f"no transcript recorded for case {case.get('id')!r}")
        if isinstance(recorded, dict):
            recorded = [recorded]
        if repetition > len(recorded):
            raise AgentCallError(
                f"case {case.get('id')!r}: {len(recorded)} transcript(s) recorded, "
                f"none for repetition {repetition}"
            )
        return copy.deepcopy(recorded[repetition - 1])
