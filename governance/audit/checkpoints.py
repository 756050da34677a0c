"""Checkpoints of the audit chain's head, signed with a key the database never sees.

The hash chain (governance.models.audit) shows a row edited in the middle, but nothing in the
database can show a removed tail (the chain that is left is whole) or a chain re-computed from
an edited row onward: whoever can drop the trigger can also re-hash. A checkpoint is a statement
made outside the database, "#N had hash H", signed with HMAC-SHA256 under `SHERLOCK_AUDIT_KEY`
and kept where the operator points: appended to `SHERLOCK_AUDIT_CHECKPOINT_FILE` (JSON Lines),
and sent to the webhook endpoints subscribed to `audit.checkpoint`. `verify_checkpoints` then
holds the database to every checkpoint: an entry a checkpoint signed that is gone, or whose
hash (stored or re-computed) is not the one signed, is tampering, up to the last checkpoint.

HMAC-SHA256 from the standard library rather than Ed25519: `cryptography` is not a dependency,
the operator who verifies is the one who holds the key, and the webhooks already sign the same
way. The price: whoever can verify could also forge, so the key stays with the operator.

A checkpoint is not itself an audit entry: appending one would move the head it signs, and the
next tick would have to sign again.
"""

import fcntl
import hashlib
import hmac
import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db.models import Max
from django.utils import timezone

from governance.choices import WebhookEvent
from governance.models import AuditEntry, WebhookDelivery, WebhookEndpoint
from governance.webhooks import notify

FIELDS = ("seq", "hash", "at", "key_id")
HASH_RE = re.compile(r"^[0-9a-f]{64}$")
# Lines checked against the database per query (SQLite allows 999 parameters on old builds).
BATCH = 500
# Problems kept in a report (the count goes on): after a cut tail every later checkpoint fails.
KEPT_PROBLEMS = 1000


class CheckpointsOff(Exception):
    """`SHERLOCK_AUDIT_KEY` is not set: nothing can be signed or verified."""


def audit_key():
    key = settings.SHERLOCK_AUDIT_KEY
    if not key:
        raise CheckpointsOff("SHERLOCK_AUDIT_KEY is not set")
    return key


def key_id(key):
    """A short name of the key (not the key): tells "signed with another key" from "forged"."""
    return hmac.new(key.encode(), b"sherlock-audit-key-id", hashlib.sha256).hexdigest()[:16]


def _signed_bytes(checkpoint):
    body = {name: checkpoint[name] for name in FIELDS}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def signature(checkpoint, key):
    return hmac.new(key.encode(), _signed_bytes(checkpoint), hashlib.sha256).hexdigest()


def make_checkpoint(seq, entry_hash, key, at=None):
    """The signed checkpoint of entry `seq` with hash `entry_hash`, as one JSON-able dict."""
    at = (at or timezone.now()).astimezone(UTC)
    checkpoint = {
        "seq": seq,
        "hash": entry_hash,
        "at": at.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "key_id": key_id(key),
    }
    checkpoint["sig"] = signature(checkpoint, key)
    return checkpoint


def to_line(checkpoint):
    return json.dumps(checkpoint, sort_keys=True, separators=(",", ":")) + "\n"


def head():
    """The newest entry's sequence and hash, or None for an empty log."""
    return AuditEntry.objects.order_by("-sequence").values("sequence", "hash").first()


def _last_line(handle):
    """The last non-empty line of an open binary file, read backwards (the file only grows)."""
    handle.seek(0, os.SEEK_END)
    end = handle.tell()
    chunk, tail = 4096, b""
    while end > 0:
        start = max(0, end - chunk)
        handle.seek(start)
        tail = handle.read(end - start) + tail
        end = start
        lines = [line for line in tail.split(b"\n") if line.strip()]
        if len(lines) > 1 or (lines and start == 0):
            return lines[-1].decode("utf-8", "replace")
    return None


def _parse(text):
    try:
        checkpoint = json.loads(text)
    except ValueError:
        return None
    return checkpoint if isinstance(checkpoint, dict) else None


def _last_webhook_checkpoint():
    """Without a file, the last checkpoint sent is the newest `audit.checkpoint` delivery."""
    body = (
        WebhookDelivery.objects.filter(event=WebhookEvent.AUDIT_CHECKPOINT)
        .order_by("-started_at", "-pk")
        .values_list("body", flat=True)
        .first()
    )
    data = (_parse(body) or {}).get("data") if body else None
    return data if isinstance(data, dict) else None


def _webhook_endpoints():
    endpoints = WebhookEndpoint.objects.filter(active=True).values_list("events", flat=True)
    return sum(WebhookEvent.AUDIT_CHECKPOINT.value in events for events in endpoints)


def _due(last, entry, interval, now):
    """Why no checkpoint is due (a sentence), or "" when one is."""
    if last is None:
        return ""
    if last.get("seq") == entry["sequence"] and last.get("hash") == entry["hash"]:
        return f"the head has not moved since the last checkpoint (#{entry['sequence']})"
    if interval is not None:
        at = _parse_time(last.get("at"))
        # A time in the future does not count: a forged delivery row dated next year must not
        # silence the schedule.
        if at is not None and timedelta(0) <= now - at < interval:
            minutes = int(interval.total_seconds() // 60)
            return f"the last checkpoint is less than {minutes} minute(s) old"
    return ""


def _parse_time(value):
    """A checkpoint's `at` (always UTC with a "Z"); None for anything else, which makes a
    checkpoint due rather than comparing a naive time with an aware one."""
    try:
        at = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else None


@dataclass
class Written:
    """What `write_checkpoint` did: the checkpoint (None when none was due, `why` says why),
    the file it was appended to and the webhook endpoints it was queued for."""

    checkpoint: dict | None
    why: str = ""
    path: object = None
    endpoints: int = 0


def write_checkpoint(*, interval=None, now=None):
    """Sign the chain's head and append it to the checkpoint file and the `audit.checkpoint`
    webhooks, unless the head has not moved since the last checkpoint (or, with `interval`,
    the last one is younger than that). Raises CheckpointsOff without a key, and ValueError
    when there is nowhere to write or the file was signed with another key."""
    key = audit_key()
    now = now or timezone.now()
    path = settings.SHERLOCK_AUDIT_CHECKPOINT_FILE
    endpoints = _webhook_endpoints()
    if path is None and not endpoints:
        raise ValueError(
            "no destination: set SHERLOCK_AUDIT_CHECKPOINT_FILE or subscribe a webhook endpoint "
            "to audit.checkpoint"
        )
    if path is None:
        written = _sign_if_due(_last_webhook_checkpoint(), key, interval, now)
    else:
        written = _append_if_due(path, key, interval, now)
    if written.checkpoint is not None and endpoints:
        notify(WebhookEvent.AUDIT_CHECKPOINT, written.checkpoint)
        written.endpoints = endpoints
    return written


def _sign_if_due(last, key, interval, now):
    entry = head()
    if entry is None:
        return Written(None, "the audit log is empty")
    why = _due(last, entry, interval, now)
    if why:
        return Written(None, why)
    return Written(make_checkpoint(entry["sequence"], entry["hash"], key, now))


def _append_if_due(path, key, interval, now):
    """The file is locked from reading its last line (and the head) to the `fsync`, so the
    command and the schedule neither append the same head twice nor an older head after a
    newer one."""
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        last_line = _last_line(handle)
        last = _parse(last_line) if last_line else None
        if last is not None and last.get("key_id") != key_id(key):
            # One file, one key: verification takes one key, so a rotated key starts a new
            # file rather than leaving the old checkpoints unverifiable.
            raise ValueError(
                f"{path} was signed with key {last.get('key_id')}, SHERLOCK_AUDIT_KEY is "
                f"{key_id(key)}: point SHERLOCK_AUDIT_CHECKPOINT_FILE at a new file"
            )
        written = _sign_if_due(last, key, interval, now)
        if written.checkpoint is None:
            return written
        handle.seek(0, os.SEEK_END)
        if handle.tell() and not _ends_with_newline(handle):
            handle.write(b"\n")  # a line cut short by a crash stays its own (bad) line
        handle.write(to_line(written.checkpoint).encode())
        handle.flush()
        os.fsync(handle.fileno())
    written.path = path
    return written


def _ends_with_newline(handle):
    handle.seek(-1, os.SEEK_END)
    ends = handle.read(1) == b"\n"
    handle.seek(0, os.SEEK_END)
    return ends


def write_due_checkpoint():
    """The schedule's tick: a checkpoint when the head moved and the last one is at least
    `SHERLOCK_AUDIT_CHECKPOINT_MINUTES` old."""
    return write_checkpoint(interval=timedelta(minutes=settings.SHERLOCK_AUDIT_CHECKPOINT_MINUTES))


# --- Verifying --------------------------------------------------------------------------------


@dataclass
class Report:
    """The outcome of `verify_checkpoints`: lines read, checkpoints whose signature holds and
    that the database agrees with, the problems (line, sentence; the first `KEPT_PROBLEMS`)
    and their count, the last good checkpoint's sequence and time, and the log's head."""

    lines: int = 0
    valid: int = 0
    problems: list = field(default_factory=list)
    problem_count: int = 0
    last_seq: int | None = None
    last_at: str = ""
    head_seq: int | None = None

    def add(self, line, why):
        self.problem_count += 1
        if len(self.problems) < KEPT_PROBLEMS:
            self.problems.append((line, why))

    @property
    def ok(self):
        return self.problem_count == 0

    @property
    def unanchored(self):
        """Entries after the last good checkpoint: nothing outside the database vouches for
        them yet."""
        return max(0, (self.head_seq or 0) - (self.last_seq or 0))


def _well_formed(checkpoint):
    if checkpoint is None:
        return "not a JSON object"
    missing = [name for name in (*FIELDS, "sig") if name not in checkpoint]
    if missing:
        return f"missing {', '.join(missing)}"
    seq = checkpoint["seq"]
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        return "seq is not a positive integer"
    if not isinstance(checkpoint["hash"], str) or not HASH_RE.match(checkpoint["hash"]):
        return "hash is not 64 hex digits"
    if not all(isinstance(checkpoint[name], str) for name in ("at", "key_id", "sig")):
        return "at, key_id and sig must be strings"
    return ""


def _signature_problem(checkpoint, key):
    if hmac.compare_digest(signature(checkpoint, key), checkpoint["sig"]):
        return ""
    ours = key_id(key)
    if checkpoint["key_id"] != ours:
        return (
            f"signature invalid (it names key {checkpoint['key_id']}, SHERLOCK_AUDIT_KEY is "
            f"{ours}: another key, or a forged line)"
        )
    return "signature invalid"


def _check_against_log(batch, report):
    """Hold the log to a batch of (line, checkpoint) whose signatures hold: one query."""
    rows = {
        entry.sequence: entry
        for entry in AuditEntry.objects.filter(sequence__in={c["seq"] for _, c in batch})
    }
    for line, checkpoint in batch:
        seq, signed = checkpoint["seq"], checkpoint["hash"]
        entry = rows.get(seq)
        if entry is None:
            if report.head_seq is None:
                report.add(
                    line, f"entry #{seq} missing: the log is empty but a checkpoint signed #{seq}"
                )
            elif seq > report.head_seq:
                report.add(
                    line,
                    f"entry #{seq} missing: the log ends at #{report.head_seq} but a checkpoint "
                    f"signed #{seq}",
                )
            else:
                report.add(line, f"entry #{seq} missing: a checkpoint signed it")
        elif entry.hash != signed:
            report.add(
                line, f"hash of #{seq} differs from the signed checkpoint ({checkpoint['at']})"
            )
        elif entry.compute_hash() != signed:
            report.add(
                line,
                f"hash of #{seq} differs from the signed checkpoint ({checkpoint['at']}): the "
                "entry was rewritten and no longer hashes to its stored hash",
            )
        else:
            report.valid += 1
            if seq > (report.last_seq or 0):
                report.last_seq, report.last_at = seq, checkpoint["at"]


def verify_checkpoints(lines):
    """Check every checkpoint in `lines` (an iterable of text lines, a file's) against the log:
    its signature under `SHERLOCK_AUDIT_KEY`, and that the entry it signed is there with that
    hash, stored and re-computed. Lines may come in any order (a webhook receiver may keep
    retried deliveries late); a tail cut and checkpointed again still fails, at the earlier
    checkpoints of the entries that were cut. Raises CheckpointsOff without a key; never loads
    the whole file or log at once."""
    key = audit_key()
    report = Report(head_seq=AuditEntry.objects.aggregate(top=Max("sequence"))["top"])
    batch = []
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        report.lines += 1
        checkpoint = _parse(text)
        why = _well_formed(checkpoint) or _signature_problem(checkpoint, key)
        if why:
            report.add(number, why if why.startswith("signature") else f"not a checkpoint: {why}")
            continue
        batch.append((number, checkpoint))
        if len(batch) == BATCH:
            _check_against_log(batch, report)
            batch = []
    if batch:
        _check_against_log(batch, report)
    if report.valid == 0 and report.head_seq is not None and report.problem_count == 0:
        report.add(0, f"no checkpoint: nothing anchors the log's {report.head_seq} entries")
    return report


# Problems spelled out one by one; the rest are counted (after a cut tail every later
# checkpoint fails the same way).
SHOWN = 20


@dataclass
class Outcome:
    """`verify_file`'s answer for a person: the exit code (0 held or nothing to check, 1
    tampering, 2 cannot verify), one summary sentence and the problems spelled out (at most
    `SHOWN`, each "FILE:LINE: why"). `verify_audit` prints it, the audit page shows it."""

    code: int
    summary: str
    problems: list = field(default_factory=list)
    verified: bool = False  # checkpoints were read and held (not merely "nothing to check")

    @property
    def tone(self):
        """The page's status colour: held, tampered, or not verified (off, no file, no key)."""
        return "fail" if self.code == 1 else "pass" if self.verified else "warn"


UNSEEN = "a removed tail or a re-computed chain would not be seen"


def verify_file(path):
    """Verify the checkpoints in `path` (None: the configured file, if any) against the log.
    Without a file there is nothing to verify, and the summary says what that leaves unseen;
    without a key a file cannot pass (code 2): never a silent "ok"."""
    path = path or settings.SHERLOCK_AUDIT_CHECKPOINT_FILE
    if path is None:
        if settings.SHERLOCK_AUDIT_KEY:
            return Outcome(0, f"no checkpoint file given (--checkpoints FILE): {UNSEEN}")
        return Outcome(0, f"checkpoints off (SHERLOCK_AUDIT_KEY is not set): {UNSEEN}")
    try:
        with open(path, encoding="utf-8", errors="replace") as lines:
            report = verify_checkpoints(lines)
    except CheckpointsOff as exc:
        return Outcome(2, f"checkpoints in {path} not verified: {exc}")
    except OSError as exc:
        return Outcome(2, f"checkpoints not verified: cannot read {path}: {exc.strerror}")
    if not report.ok:
        problems = [
            f"{path}:{line}: {why}" if line else f"{path}: {why}"
            for line, why in report.problems[:SHOWN]
        ]
        if report.problem_count > SHOWN:
            problems.append(f"... and {report.problem_count - SHOWN} more")
        summary = (
            f"checkpoints failed: {report.problem_count} problem(s), {report.lines} line(s) "
            f"read from {path}"
        )
        return Outcome(1, summary, problems)
    last = f", the last signs #{report.last_seq} ({report.last_at})" if report.last_seq else ""
    tail = (
        f"; {report.unanchored} entries after it are not anchored yet" if report.unanchored else ""
    )
    return Outcome(0, f"checkpoints verified: {report.valid} in {path}{last}{tail}", verified=True)
