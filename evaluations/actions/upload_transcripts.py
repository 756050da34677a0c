"""UploadTranscripts: the `sherlock` client sends the answers of a waiting client run.

A client run (docs/client.md) has one work item per case and repetition, keyed
`"<case_version_id>:<repetition>"` (`Trial.work_key`). Each uploaded item is a transcript (the
documented format, checked by `agents.adapters.client.validate_transcript`) or the error the
team's function met on the client (`raised`, `timeout`, `invalid`), which becomes the trial's
agent error. Nothing is scored here: the answers wait on their pending trials until the run is
finished (`FinishClientRun`).

- Atomic: every item is checked before anything is written; the first bad one is refused
  naming its place (`items[3].transcript.latency_ms`), and nothing is stored.
- Idempotent: an item whose key was already stored (in an earlier batch or earlier in this
  one) is a `duplicate` and changes nothing, whatever it holds, so a client that retries a
  batch whose answer it lost, or resumes after a crash, never doubles a trial.
- Uploads go to a waiting run only (409 `run_closed` otherwise). The run row is locked for the
  batch, so concurrent batches of one run, and a finish, are serialised.
"""

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agents.adapters.client import ERROR_KINDS, error_text, validate_transcript
from evaluations.choices import RunStatus, TrialStatus
from evaluations.engine.enqueue import enqueue_run
from evaluations.models import Run, Trial
from sherlock.core.actions import Action
from sherlock.core.errors import ActionConflict, ActionDenied, ActionInvalid
from sherlock.core.limits import NOTE_MAX, check_document, excerpt
from sherlock.core.permissions import user_can

UPLOAD_MAX_ITEMS = 500


class UploadTranscripts(Action):
    """Store the client's answers `items` on `run`'s trials; returns `{"accepted",
    "duplicates", "remaining"}`. A Builder of the run's agent (or an Admin) may, as for
    starting its runs; the key's owner need not be who started the run."""

    noun = "run"
    verb = "upload"

    def __init__(self, *, acting_user, run, items):
        super().__init__(acting_user=acting_user)
        self.run = run
        self.items = items

    def check(self):
        if not user_can(self.acting_user, "build", self.run.agent_version.agent):
            raise ActionDenied(
                "You may not upload transcripts to runs of this agent (Builder role needed)."
            )
        _check_open(self.run)

    def perform(self):
        run = Run.objects.select_for_update().get(pk=self.run.pk)
        _check_open(run)  # a finish may have come in since the run was read
        items = _read_items(self.items)
        # Only the trials this batch names (their case versions' repetitions): a batch costs
        # the same however large the run is.
        case_versions = {_case_version_of(key) for key, _, _ in items} - {None}
        trials = {
            trial.work_key: trial
            for trial in Trial.objects.filter(run=run, case_version_id__in=case_versions).only(
                "pk", "case_version_id", "repetition", "status", "uploaded_at"
            )
        }
        now = timezone.now()
        accepted, duplicates, seen = [], 0, set()
        for index, (key, transcript, error) in enumerate(items):
            trial = trials.get(key)
            if trial is None:
                raise ActionInvalid(
                    f"items[{index}].key: {excerpt(key)} is not a work item of run {run.pk} "
                    '(keys are "<case_version_id>:<repetition>", listed by its work/ endpoint)',
                    field=f"items[{index}].key",
                    code="unknown_key",
                )
            if key in seen or trial.uploaded_at is not None:
                duplicates += 1
                continue
            seen.add(key)
            trial.transcript = transcript if transcript is not None else {}
            trial.error = error or ""
            trial.uploaded_at = now
            accepted.append(trial)
        Trial.objects.bulk_update(accepted, ["transcript", "error", "uploaded_at"], batch_size=200)
        remaining = Trial.objects.filter(
            run=run, status=TrialStatus.PENDING, uploaded_at__isnull=True
        ).count()
        result = {"accepted": len(accepted), "duplicates": duplicates, "remaining": remaining}
        if accepted and settings.SHERLOCK_CLIENT_SCORE_EARLY:
            # Scored while the client's calls go on, not after its finish: each batch's trials
            # go to the workers as soon as they are stored (evaluations.engine.client).
            scored = [trial.pk for trial in accepted]
            transaction.on_commit(lambda: enqueue_run(run.pk, trial_ids=scored, uploaded=True))
        if accepted:  # a batch of duplicates changed nothing: nothing to record
            self.audit(
                target=run,
                after={**result, "errors": sum(1 for trial in accepted if trial.error)},
            )
        return result


def _case_version_of(key):
    """The case version id a work key names (`"<case_version_id>:<repetition>"`), or None for
    a key of another shape (refused as unknown below)."""
    head, _, tail = key.partition(":")
    if head.isascii() and head.isdigit() and len(head) < 19:
        return int(head)
    return None


def _check_open(run):
    if run.status != RunStatus.WAITING:
        raise ActionConflict(
            f"Run {run.pk} is {run.status}: it takes no more uploads (only a waiting client run "
            "does).",
            code="run_closed",
        )


def _read_items(items):
    """`[(key, transcript | None, error | None)]`, or ActionInvalid naming the first bad item."""
    if not isinstance(items, list):
        raise ActionInvalid("items: must be a list", field="items")
    if not items:
        raise ActionInvalid("items: at least one item", field="items")
    if len(items) > UPLOAD_MAX_ITEMS:
        raise ActionInvalid(
            f"items: at most {UPLOAD_MAX_ITEMS} items per call (got {len(items)})",
            field="items",
            code="too_many",
        )
    read = []
    for index, item in enumerate(items):
        where = f"items[{index}]"
        if not isinstance(item, dict):
            raise ActionInvalid(f"{where}: must be an object", field=where)
        unknown = sorted(set(item) - {"key", "transcript", "error"})
        if unknown:
            raise ActionInvalid(
                f"{where}.{excerpt(unknown[0])}: is not a known field (key, transcript, error)",
                field=f"{where}.{unknown[0]}"[:100],
            )
        key = item.get("key")
        if not isinstance(key, str) or not key:
            raise ActionInvalid(f"{where}.key: is required (a string)", field=f"{where}.key")
        if ("transcript" in item) == ("error" in item):
            raise ActionInvalid(
                f"{where}: give either a transcript or an error", field=f"{where}.transcript"
            )
        if "transcript" in item:
            transcript = item["transcript"]
            try:
                validate_transcript(transcript, f"{where}.transcript")
            except ValueError as exc:
                field = str(exc).split(":", 1)[0]
                raise ActionInvalid(str(exc), field=field) from None
            check_document(
                f"{where}.transcript", transcript, settings.SHERLOCK_UPLOAD_ITEM_MAX_BYTES
            )
            read.append((key, transcript, None))
        else:
            read.append((key, None, _error(item["error"], f"{where}.error")))
    return read


def _error(error, where):
    """The trial's error text for an error item: `{"kind", "message"}`, the message cut to
    NOTE_MAX characters (it is the agent's output, often a traceback, not a person's text)."""
    if not isinstance(error, dict):
        raise ActionInvalid(f'{where}: must be {{"kind", "message"}}', field=where)
    unknown = sorted(set(error) - {"kind", "message"})
    if unknown:
        raise ActionInvalid(
            f"{where}.{excerpt(unknown[0])}: is not a known field (kind, message)",
            field=f"{where}.{unknown[0]}"[:100],
        )
    kind, message = error.get("kind"), error.get("message", "")
    if kind not in ERROR_KINDS:
        raise ActionInvalid(
            f"{where}.kind: must be one of {', '.join(ERROR_KINDS)} (got {excerpt(kind)})",
            field=f"{where}.kind",
        )
    if not isinstance(message, str):
        raise ActionInvalid(f"{where}.message: must be a string", field=f"{where}.message")
    return error_text(kind, message[:NOTE_MAX])
