"""Release attestations, as issued, and the public keys that verify them."""

from django.db import models

from agents.models import AgentVersion
from governance.choices import AttestationEvent


class AttestationKey(models.Model):
    """A public key attestations were signed with, and when it was in use (`not_after` empty:
    the key in use now). Published at `/.well-known/sherlock/attestation-keys.json`; the private
    half is never stored."""

    keyid = models.CharField(max_length=64, unique=True)
    public_key = models.TextField(help_text="PEM (SubjectPublicKeyInfo), Ed25519.")
    not_before = models.DateTimeField()
    not_after = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-not_before"]

    def __str__(self):
        return f"key {self.keyid[:16]}"


class Attestation(models.Model):
    """One signed statement of a release event of `agent_version`: the DSSE `envelope` as
    issued (never changed), the SHA-256 of its payload and the key that signed it."""

    agent_version = models.ForeignKey(
        AgentVersion, on_delete=models.PROTECT, related_name="attestations"
    )
    event = models.CharField(max_length=10, choices=AttestationEvent.choices)
    envelope = models.JSONField()
    digest = models.CharField(max_length=64, help_text="SHA-256 of the signed payload.")
    keyid = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"{self.agent_version} {self.get_event_display()} (attestation {self.pk})"
