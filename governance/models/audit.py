"""The audit log: append-only, hash-chained records of who did what, when, why, before/after.

Append-only is enforced by the database (a trigger rejects UPDATE and DELETE, migration 0002),
not only by the code. Each entry holds the previous entry's hash and a SHA-256 over its own
canonical JSON, so a row changed behind the trigger's back (by someone who dropped it) breaks
the chain at that row, and `manage.py verify_audit` names it.
"""

import hashlib
import json
from datetime import UTC

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, models, transaction
from django.utils import timezone

GENESIS_HASH = "0" * 64


def to_json(value):
    """Plain JSON (what the database will hand back), so the hash is computed over exactly
    what is stored: Decimals, datetimes and UUIDs become strings once, here."""
    if value is None:
        return None
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def _describe_target(target):
    if target is None:
        return "", "", ""
    if isinstance(target, tuple):
        kind, pk, text = target
        return kind, str(pk), text
    opts = target._meta
    return f"{opts.app_label}.{opts.model_name}", str(target.pk), str(target)[:300]


class AuditQuerySet(models.QuerySet):
    def append(
        self,
        action,
        *,
        actor=None,
        target=None,
        before=None,
        after=None,
        reason="",
        request_id="",
        ip=None,
    ):
        """Append one entry in the caller's transaction (or a new one).

        The chain needs a strict order: on PostgreSQL the table is locked in EXCLUSIVE mode
        (readers go on, other appenders wait) until the transaction ends; SQLite's IMMEDIATE
        transactions already hold the one write lock.
        """
        with transaction.atomic():
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute(f"LOCK TABLE {self.model._meta.db_table} IN EXCLUSIVE MODE")
            last = self.order_by("-sequence").values("sequence", "hash").first()
            target_type, target_id, target_repr = _describe_target(target)
            entry = self.model(
                sequence=(last["sequence"] + 1) if last else 1,
                at=timezone.now(),
                actor_id=getattr(actor, "pk", None),
                actor_repr=str(actor.get_username()) if actor is not None else "",
                action=action,
                target_type=target_type,
                target_id=target_id,
                target_repr=target_repr,
                before=to_json(before),
                after=to_json(after),
                reason=reason or "",
                request_id=request_id or "",
                ip=ip or None,
                prev_hash=last["hash"] if last else GENESIS_HASH,
            )
            entry.hash = entry.compute_hash()
            entry.save(force_insert=True)
        return entry


class AuditEntry(models.Model):
    """One append-only, hash-chained audit record. Action codes are `app.noun.verb`."""

    sequence = models.PositiveBigIntegerField(unique=True)
    at = models.DateTimeField(db_index=True)
    # No database FK: deleting a user must not touch (UPDATE) the append-only rows.
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    actor_repr = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=100, db_index=True)
    target_type = models.CharField(max_length=100, blank=True, db_index=True)
    target_id = models.CharField(max_length=64, blank=True)
    target_repr = models.CharField(max_length=300, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    reason = models.TextField(blank=True)
    request_id = models.CharField(max_length=64, blank=True)
    ip = models.GenericIPAddressField(null=True, blank=True)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["-sequence"]
        verbose_name_plural = "audit entries"

    def __str__(self):
        return f"#{self.sequence} {self.action} by {self.actor_repr or 'system'}"

    def canonical(self):
        at = self.at.astimezone(UTC) if timezone.is_aware(self.at) else self.at
        return json.dumps(
            {
                "sequence": self.sequence,
                "at": at.isoformat(timespec="microseconds"),
                "actor_id": self.actor_id,
                "actor": self.actor_repr,
                "action": self.action,
                "target": [self.target_type, self.target_id, self.target_repr],
                "before": self.before,
                "after": self.after,
                "reason": self.reason,
                "request_id": self.request_id,
                "ip": self.ip,
                "prev_hash": self.prev_hash,
            },
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )

    def compute_hash(self):
        return hashlib.sha256(self.canonical().encode()).hexdigest()


def verify_chain(queryset=None, batch_size=2000):
    """Re-compute the chain in sequence order. Returns (checked, first_broken_sequence_or_None,
    why). Streams in batches so a long log is not loaded at once."""
    qs = (queryset or AuditEntry.objects.all()).order_by("sequence")
    expected_prev = GENESIS_HASH
    expected_seq = None
    checked = 0
    for entry in qs.iterator(chunk_size=batch_size):
        if expected_seq is not None and entry.sequence != expected_seq:
            return checked, expected_seq, f"entry {expected_seq} is missing"
        if entry.prev_hash != expected_prev:
            return checked, entry.sequence, "prev_hash does not match the previous entry"
        if entry.compute_hash() != entry.hash:
            return checked, entry.sequence, "hash does not match the entry's content"
        checked += 1
        expected_prev = entry.hash
        expected_seq = entry.sequence + 1
    return checked, None, ""
