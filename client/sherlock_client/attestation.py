"""Verifying a release attestation without Sherlock: the signature with a public key, the
subject against the configuration a deploy is about to run, the release event, and its age.

`verify_attestation(envelope, public_key, config_hash=..., max_age=...)` returns the statement
when every check holds and raises `AttestationRefused` with a one-line reason otherwise: a
tampered envelope, a wrong key, a different configuration, a retired version and an expired
attestation each fail in their own words. docs/attestations.md, "Verifying".
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://sherlock.dev/attestations/release/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
LIVE_EVENTS = ("publish", "rollback")


class AttestationRefused(Exception):
    """Why an attestation does not allow this deploy, in one line."""


def pae(payload_type: str, body: bytes) -> bytes:
    """DSSE's pre-authentication encoding: what the signature covers."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(body), body)


def config_hash(adapter: str, config: Any) -> str:
    """The SHA-256 Sherlock gives a version's configuration: its adapter and config as JSON with
    sorted keys and Python's default separators."""
    canonical = json.dumps({"adapter": adapter, "config": config}, sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def load_public_key(text: bytes) -> tuple[Ed25519PublicKey, str]:
    """(the key, its key id) from a PEM public key."""
    try:
        key = serialization.load_pem_public_key(text)
    except ValueError:
        raise AttestationRefused("the public key is not a PEM public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise AttestationRefused("the public key is not an Ed25519 key")
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return key, hashlib.sha256(raw).hexdigest()


def _signed_body(envelope: Any, key: Ed25519PublicKey, keyid: str) -> bytes:
    if not isinstance(envelope, dict) or envelope.get("payloadType") != PAYLOAD_TYPE:
        raise AttestationRefused("not an in-toto DSSE envelope")
    signatures = envelope.get("signatures")
    if not isinstance(signatures, list) or not signatures:
        raise AttestationRefused("the envelope has no signature")
    ours = [s for s in signatures if isinstance(s, dict) and s.get("keyid") == keyid]
    if not ours:
        named = ", ".join(str(s.get("keyid"))[:16] for s in signatures if isinstance(s, dict))
        raise AttestationRefused(
            f"signed by key {named or 'unnamed'}, not by this public key ({keyid[:16]})"
        )
    try:
        body = base64.b64decode(str(envelope.get("payload")), validate=True)
        key.verify(
            base64.b64decode(str(ours[0].get("sig")), validate=True), pae(PAYLOAD_TYPE, body)
        )
    except (InvalidSignature, binascii.Error, ValueError):
        raise AttestationRefused(
            "the signature does not verify: the envelope was changed after it was signed"
        ) from None
    return body


def verify_attestation(
    envelope: Any,
    public_key: bytes,
    *,
    config_hash: str | None = None,
    max_age: timedelta | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The statement of `envelope` once its signature verifies with `public_key` (PEM), its
    subject's digest is `config_hash` (when given), it states a version going live (a
    publication or a rollback, cleared by its gate or a bypass), and it was issued within
    `max_age` (when given); AttestationRefused otherwise."""
    key, keyid = load_public_key(public_key)
    try:
        statement = json.loads(_signed_body(envelope, key, keyid))
    except json.JSONDecodeError:
        raise AttestationRefused("the signed payload is not JSON") from None
    if not isinstance(statement, dict) or statement.get("_type") != STATEMENT_TYPE:
        raise AttestationRefused("the payload is not an in-toto Statement v1")
    if statement.get("predicateType") != PREDICATE_TYPE:
        raise AttestationRefused(f"not a Sherlock release attestation ({PREDICATE_TYPE})")
    predicate = statement.get("predicate") or {}
    subject = (statement.get("subject") or [{}])[0]
    digest = (subject.get("digest") or {}).get("sha256")
    if config_hash is not None and digest != config_hash.lower():
        raise AttestationRefused(
            f"a different configuration: the attestation is for {subject.get('name')} "
            f"(sha256 {str(digest)[:12]}), the configuration given is {config_hash[:12]}"
        )
    event = predicate.get("event")
    if event == "retire":
        raise AttestationRefused(
            f"{subject.get('name')} was retired: this attestation withdraws it"
        )
    if event not in LIVE_EVENTS:
        raise AttestationRefused(f"the attestation states {event!r}, not a publication")
    decision = predicate.get("decision") or {}
    if decision.get("release") != "pass" and not predicate.get("bypass"):
        raise AttestationRefused("the decision did not pass and no bypass cleared it")
    if max_age is not None:
        issued = _issued(predicate.get("issuedAt"))
        if (now or datetime.now(UTC)) - issued > max_age:
            raise AttestationRefused(
                f"expired: issued {issued:%Y-%m-%d %H:%M} UTC, older than {max_age}"
            )
    return statement


def _issued(text: Any) -> datetime:
    try:
        issued = datetime.fromisoformat(str(text))
    except ValueError:
        raise AttestationRefused("the attestation has no readable issue time") from None
    return issued if issued.tzinfo else issued.replace(tzinfo=UTC)


def public_keys(text: bytes, envelope: Any) -> list[bytes]:
    """The PEM keys to try: `text` itself when it is a PEM key, else, from a keys file
    (`/.well-known/sherlock/attestation-keys.json`), the keys whose id signed `envelope` (the
    first key of the file when none did, so the refusal names the mismatch)."""
    if not text.lstrip().startswith(b"{"):
        return [text]
    listed = json.loads(text).get("keys") or []
    signers = {
        s.get("keyid")
        for s in (envelope.get("signatures") or [] if isinstance(envelope, dict) else [])
        if isinstance(s, dict)
    }
    chosen = [k["public_key"].encode() for k in listed if k.get("keyid") in signers]
    if not chosen and listed:
        chosen = [listed[0]["public_key"].encode()]
    if not chosen:
        raise ValueError("the keys file lists no key")
    return chosen
