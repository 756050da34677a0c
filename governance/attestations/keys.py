"""The signing key and the published public keys.

The private key is read from `SHERLOCK_ATTESTATION_KEY_FILE` (a PEM file, readable by its owner
only) or `SHERLOCK_ATTESTATION_KEY` (the PEM itself, from the environment): never stored in the
database, never quoted in an error. Its public half is published with a key id (the SHA-256 of
its raw 32 bytes, in hex) and a validity window (`AttestationKey`): a new key closes the window of
the one before, which stays listed, so attestations it signed still verify.
"""

import hashlib
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from django.conf import settings
from django.utils import timezone

from governance.models import AttestationKey


class KeyUnavailable(Exception):
    """The signing key cannot be read; the message never quotes it."""


def keyid_of(public: Ed25519PublicKey) -> str:
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def public_pem(public: Ed25519PublicKey) -> str:
    return public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()


def private_pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def signing_key() -> Ed25519PrivateKey:
    """The configured Ed25519 private key; KeyUnavailable says which setting, never the key."""
    if settings.SHERLOCK_ATTESTATION_KEY:
        text, where = settings.SHERLOCK_ATTESTATION_KEY.encode(), "SHERLOCK_ATTESTATION_KEY"
    elif settings.SHERLOCK_ATTESTATION_KEY_FILE:
        path = Path(settings.SHERLOCK_ATTESTATION_KEY_FILE)
        where = f"SHERLOCK_ATTESTATION_KEY_FILE ({path})"
        try:
            text = path.read_bytes()
        except OSError as exc:
            raise KeyUnavailable(f"{where} cannot be read: {exc.strerror}") from None
    else:
        raise KeyUnavailable("no signing key is configured (SHERLOCK_ATTESTATION_KEY_FILE)")
    try:
        key = serialization.load_pem_private_key(text, password=None)
    except (ValueError, TypeError):
        raise KeyUnavailable(f"{where} holds no unencrypted PEM private key") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyUnavailable(f"{where} holds a key that is not Ed25519")
    return key


def registered(public: Ed25519PublicKey) -> AttestationKey:
    """The `AttestationKey` row of `public`, registered now (closing the window of the key in
    use before it) when it is new: replacing the key file rotates the key. Runs in the caller's
    transaction."""
    keyid = keyid_of(public)
    found = AttestationKey.objects.filter(keyid=keyid).first()
    if found is not None:
        return found
    now = timezone.now()
    AttestationKey.objects.filter(not_after__isnull=True).update(not_after=now)
    return AttestationKey.objects.create(keyid=keyid, public_key=public_pem(public), not_before=now)
