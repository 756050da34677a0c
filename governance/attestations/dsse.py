"""DSSE (Dead Simple Signing Envelope, v1): the payload signed over its pre-authentication
encoding, `DSSEv1 <len(type)> <type> <len(body)> <body>`, so a signature never verifies a payload
read as another type. Ed25519 through `cryptography`."""

import base64
import json
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

IN_TOTO = "application/vnd.in-toto+json"


def pae(payload_type: str, body: bytes) -> bytes:
    """The pre-authentication encoding the signature covers."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(body), body)


def sign(
    body: bytes, key: Ed25519PrivateKey, keyid: str, payload_type: str = IN_TOTO
) -> dict[str, Any]:
    """The envelope of `body`, signed by `key` (named `keyid`)."""
    signature = key.sign(pae(payload_type, body))
    return {
        "payloadType": payload_type,
        "payload": base64.b64encode(body).decode(),
        "signatures": [{"keyid": keyid, "sig": base64.b64encode(signature).decode()}],
    }


def verified_payload(envelope: dict[str, Any], key: Ed25519PublicKey) -> bytes:
    """The payload of `envelope` once one of its signatures verifies with `key`; ValueError
    otherwise."""
    body = base64.b64decode(envelope["payload"], validate=True)
    message = pae(envelope["payloadType"], body)
    for signature in envelope.get("signatures") or []:
        try:
            key.verify(base64.b64decode(signature["sig"], validate=True), message)
        except (InvalidSignature, ValueError, KeyError, TypeError):
            continue
        return body
    raise ValueError("no signature of the envelope verifies with this key")


def statement_of(envelope: dict[str, Any]) -> dict[str, Any]:
    """The statement an envelope carries (not verified: for showing it)."""
    return json.loads(base64.b64decode(envelope["payload"]))
