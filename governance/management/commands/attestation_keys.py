"""`manage.py attestation_keys create --file PATH` makes an Ed25519 signing key (a PEM file only
its owner may read); `manage.py attestation_keys list` shows the published public keys, their
windows, and which one the configured key is. docs/attestations.md, "Keys"."""

import os
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from governance.attestations.keys import KeyUnavailable, keyid_of, private_pem, signing_key
from governance.models import AttestationKey


class Command(BaseCommand):
    help = "Create an attestation signing key, or list the published public keys."
    # `create` runs before the first migration (`make run`) and before a key exists, which the
    # start-up checks would refuse.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        verbs = parser.add_subparsers(dest="verb", required=True)
        create = verbs.add_parser("create", help="write a new Ed25519 private key (PEM, 0600)")
        create.add_argument("--file", required=True, help="where to write it")
        create.add_argument(
            "--if-missing", action="store_true", help="keep the file when it exists already"
        )
        verbs.add_parser("list", help="the published public keys and their windows")

    def handle(self, *args, verb, **options):
        if verb == "create":
            self.create(Path(options["file"]).expanduser(), options["if_missing"])
        else:
            self.list()

    def create(self, path, if_missing):
        if path.exists():
            if if_missing:
                self.stdout.write(f"{path}: kept (a key is there already)")
                return
            raise CommandError(f"{path} exists: a key is never overwritten (move it first)")
        key = Ed25519PrivateKey.generate()
        # Created readable by its owner alone, before a byte is written.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(private_pem(key))
        self.stdout.write(
            f"{path}: a new Ed25519 signing key, key id {keyid_of(key.public_key())}, for "
            "SHERLOCK_ATTESTATION_KEY_FILE (`make run` signs the demo's releases with it); its "
            "public half is published with the first attestation it signs."
        )

    def list(self):
        try:
            configured = keyid_of(signing_key().public_key())
        except KeyUnavailable as exc:
            configured = None
            self.stdout.write(f"configured key: none ({exc})")
        for key in AttestationKey.objects.all():
            window = f"{key.not_before:%Y-%m-%d %H:%M} to " + (
                f"{key.not_after:%Y-%m-%d %H:%M}" if key.not_after else "now"
            )
            mark = " (configured)" if key.keyid == configured else ""
            self.stdout.write(f"{key.keyid}  {window}{mark}")
        if configured and not AttestationKey.objects.filter(keyid=configured).exists():
            self.stdout.write(f"{configured}  not yet published (with its first attestation)")
        if not settings.SHERLOCK_ATTESTATIONS:
            self.stdout.write("attestations are off (SHERLOCK_ATTESTATIONS)")
