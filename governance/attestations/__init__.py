"""Signed release attestations: an in-toto Statement v1 in a DSSE envelope, signed with Ed25519,
written by the publish, rollback and retire actions in their own transaction, so no version goes
live unattested while attestations are on. A deploy or an auditor verifies one without Sherlock,
with the public key alone (`sherlock verify --attestation`). docs/attestations.md.

- `dsse`: the envelope (the pre-authentication encoding, signing, verifying);
- `keys`: the signing key from settings, its key id, the published public keys;
- `statement`: what an attestation says of a version (the subject and the predicate);
- `issue`: `attest`, what the actions call.
"""
