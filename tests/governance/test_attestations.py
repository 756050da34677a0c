"""Every publication, rollback and retirement is attested: an in-toto Statement v1 in a DSSE
envelope signed with Ed25519, written in the action's transaction (a key that cannot be read
refuses the action and changes nothing), audited, served by the API, verifiable with the public
key alone, and by a verifier not written here (securesystemslib)."""

import base64
import copy
import json
import os
import sys
from pathlib import Path

import jsonschema
import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from agents.choices import VersionState
from governance.actions.publish_version import PublishVersion
from governance.actions.retire_version import RetireVersion
from governance.attestations import dsse
from governance.attestations.keys import keyid_of, private_pem, public_pem
from governance.attestations.statement import PREDICATE_TYPE, STATEMENT_TYPE
from governance.models import Attestation, AttestationKey, AuditEntry
from sherlock.core.errors import ActionConflict
from tests.support.governance import api_client

SCHEMA = Path(__file__).resolve().parents[2] / "docs/schemas/release-attestation-v1.json"


@pytest.fixture
def signing_key(tmp_path, settings):
    key = Ed25519PrivateKey.generate()
    path = tmp_path / "attestation-key.pem"
    path.write_bytes(private_pem(key))
    os.chmod(path, 0o600)
    settings.SHERLOCK_ATTESTATIONS = True
    settings.SHERLOCK_ATTESTATION_KEY = ""
    settings.SHERLOCK_ATTESTATION_KEY_FILE = path
    return key


def statement(attestation):
    return json.loads(base64.b64decode(attestation.envelope["payload"]))


def test_a_publication_is_attested_in_its_transaction(signing_key, publisher, passed_request):
    version = passed_request.agent_version
    PublishVersion(acting_user=publisher, agent_version=version).execute()
    attestation = Attestation.objects.get(agent_version=version)
    assert attestation.event == "publish"
    body = dsse.verified_payload(attestation.envelope, signing_key.public_key())
    found = json.loads(body)
    assert found["_type"] == STATEMENT_TYPE and found["predicateType"] == PREDICATE_TYPE
    assert found["subject"] == [
        {
            "name": f"{version.agent.slug}@v{version.number}",
            "digest": {"sha256": version.config_hash},
        }
    ]
    predicate = found["predicate"]
    assert predicate["event"] == "publish" and predicate["actor"] == publisher.get_username()
    assert predicate["decision"]["publishRequest"] == passed_request.pk
    assert predicate["decision"]["release"] == "pass"
    assert predicate["policy"]["version"] == passed_request.decision["policy"]["version"]
    assert [run["id"] for run in predicate["gateRuns"]] == [
        run["id"] for run in passed_request.decision["runs"]
    ]
    assert len(predicate["datasets"]) == 1 and len(predicate["datasets"][0]["sha256"]) == 64
    assert predicate["judge"]["rubrics"]  # the pinned prompts' hashes
    jsonschema.validate(found, json.loads(SCHEMA.read_text()))
    # The audit head it names is the publication's own entry, and the attestation is audited.
    published = AuditEntry.objects.get(action="governance.version.publish")
    assert predicate["auditHead"] == {"sequence": published.sequence, "hash": published.hash}
    entry = AuditEntry.objects.get(action="governance.attestation.create")
    assert entry.after["digest"] == attestation.digest
    assert AttestationKey.objects.get().keyid == keyid_of(signing_key.public_key())


def test_an_unreadable_key_refuses_the_publication_and_changes_nothing(
    signing_key, settings, tmp_path, publisher, passed_request
):
    settings.SHERLOCK_ATTESTATION_KEY_FILE = tmp_path / "gone.pem"
    version = passed_request.agent_version
    with pytest.raises(ActionConflict, match="could not be attested") as refused:
        PublishVersion(acting_user=publisher, agent_version=version).execute()
    assert "BEGIN" not in str(refused.value)
    version.refresh_from_db()
    assert version.state == VersionState.DRAFT and not Attestation.objects.exists()
    assert AuditEntry.objects.filter(action="governance.version.refused").exists()
    assert not AuditEntry.objects.filter(action="governance.version.publish").exists()


def test_with_attestations_off_nothing_is_signed(settings, publisher, passed_request):
    settings.SHERLOCK_ATTESTATIONS = False
    PublishVersion(acting_user=publisher, agent_version=passed_request.agent_version).execute()
    assert not Attestation.objects.exists()


def test_a_retirement_is_attested_and_names_the_request_it_was_published_on(
    signing_key, publisher, passed_request
):
    version = passed_request.agent_version
    PublishVersion(acting_user=publisher, agent_version=version).execute()
    RetireVersion(acting_user=publisher, agent_version=version, reason="withdrawn").execute()
    retired = Attestation.objects.get(agent_version=version, event="retire")
    predicate = statement(retired)["predicate"]
    assert predicate["event"] == "retire" and predicate["reason"] == "withdrawn"
    jsonschema.validate(statement(retired), json.loads(SCHEMA.read_text()))
    assert predicate["decision"]["publishRequest"] == passed_request.pk


def test_a_rotated_key_closes_the_old_window_and_both_stay_published(
    signing_key, settings, tmp_path, publisher, passed_request, client
):
    version = passed_request.agent_version
    PublishVersion(acting_user=publisher, agent_version=version).execute()
    newer = Ed25519PrivateKey.generate()
    path = tmp_path / "newer.pem"
    path.write_bytes(private_pem(newer))
    settings.SHERLOCK_ATTESTATION_KEY_FILE = path
    RetireVersion(acting_user=publisher, agent_version=version, reason="rotated").execute()
    keys = client.get("/.well-known/sherlock/attestation-keys.json").json()["keys"]
    assert [k["keyid"] for k in keys] == [
        keyid_of(newer.public_key()),
        keyid_of(signing_key.public_key()),
    ]
    assert keys[0]["not_after"] is None and keys[1]["not_after"] is not None
    assert keys[1]["public_key"] == public_pem(signing_key.public_key())


def test_the_api_serves_a_versions_attestations_to_who_may_see_it(
    signing_key, publisher, passed_request, outsider
):
    version = passed_request.agent_version
    PublishVersion(acting_user=publisher, agent_version=version).execute()
    answer = api_client(publisher).get(f"/api/v1/versions/{version.pk}/attestations/")
    assert answer.status_code == 200
    [item] = answer.json()
    assert item["event"] == "publish" and item["envelope"]["payloadType"] == dsse.IN_TOTO
    hidden = api_client(outsider).get(f"/api/v1/versions/{version.pk}/attestations/")
    assert hidden.status_code == 404


def test_a_verifier_not_written_here_verifies_the_envelope(signing_key, publisher, passed_request):
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import SSlibKey

    PublishVersion(acting_user=publisher, agent_version=passed_request.agent_version).execute()
    stored = Attestation.objects.get()
    raw = signing_key.public_key().public_bytes_raw()
    key = SSlibKey(stored.keyid, "ed25519", "ed25519", {"public": raw.hex()})
    envelope = Envelope.from_dict(copy.deepcopy(stored.envelope))  # it rewrites what it reads
    assert key.keyid in envelope.verify([key], 1)
    forged = base64.b64encode(b'{"_type": "forged"}').decode()
    tampered = Envelope.from_dict({**copy.deepcopy(stored.envelope), "payload": forged})
    with pytest.raises(Exception, match="threshold"):
        tampered.verify([key], 1)


# --- verified offline, by the client, with the public key alone -------------------------------


@pytest.fixture
def published(signing_key, publisher, passed_request, tmp_path):
    """(the attestation file, the public key file, the version) of a publication."""
    version = passed_request.agent_version
    PublishVersion(acting_user=publisher, agent_version=version).execute()
    attestation = tmp_path / "release.intoto.json"
    attestation.write_text(json.dumps(Attestation.objects.get(agent_version=version).envelope))
    key = tmp_path / "key.pem"
    key.write_text(public_pem(signing_key.public_key()))
    return attestation, key, version


def verify(*argv, capsys):
    # The client as a deploy installs it (`pip install ./client`): no server module in it.
    client = str(Path(__file__).resolve().parents[2] / "client")
    if client not in sys.path:
        sys.path.insert(0, client)
    from sherlock_client.cli import main

    code = main(["verify", *map(str, argv)])
    return code, capsys.readouterr().out.strip()


def test_the_client_verifies_an_attestation_offline_against_the_configuration(
    published, tmp_path, capsys, monkeypatch
):
    monkeypatch.delenv("SHERLOCK_URL", raising=False)
    attestation, key, version = published
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"adapter": version.adapter, "config": version.config}))
    code, out = verify("--attestation", attestation, "--public-key", key, "--config", config,
                       capsys=capsys)  # fmt: skip
    assert code == 0, out
    assert "signature good, configuration matches" in out


def test_each_way_an_attestation_fails_has_its_own_message(
    published, tmp_path, capsys, signing_key, publisher
):
    attestation, key, version = published
    envelope = json.loads(attestation.read_text())
    # Tampered: one byte of the statement changed after signing.
    body = base64.b64decode(envelope["payload"]).replace(b'"publish"', b'"pubLish"', 1)
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps({**envelope, "payload": base64.b64encode(body).decode()}))
    # A wrong key.
    other = tmp_path / "other.pem"
    other.write_text(public_pem(Ed25519PrivateKey.generate().public_key()))
    # The retirement of the same version.
    RetireVersion(acting_user=publisher, agent_version=version, reason="pulled").execute()
    retired = tmp_path / "retired.json"
    retired.write_text(json.dumps(Attestation.objects.get(event="retire").envelope))
    cases = {
        "changed after it was signed": ("--attestation", tampered, "--public-key", key),
        "not by this public key": ("--attestation", attestation, "--public-key", other),
        "a different configuration": (
            "--attestation", attestation, "--public-key", key, "--config-hash", "ab" * 32,
        ),
        "was retired": ("--attestation", retired, "--public-key", key),
        "expired": ("--attestation", attestation, "--public-key", key, "--max-age", "0"),
    }  # fmt: skip
    for reason, argv in cases.items():
        code, out = verify(*argv, capsys=capsys)
        assert code == 1 and out.startswith("sherlock: refused:") and reason in out, (reason, out)
        assert len(out.splitlines()) == 1


def test_the_keys_file_of_the_well_known_url_verifies_too(published, tmp_path, capsys, client):
    attestation, _, version = published
    keys = tmp_path / "attestation-keys.json"
    keys.write_bytes(client.get("/.well-known/sherlock/attestation-keys.json").content)
    code, out = verify("--attestation", attestation, "--public-key", keys,
                       "--config-hash", version.config_hash, capsys=capsys)  # fmt: skip
    assert code == 0, out


def test_the_publish_page_lists_the_attestations_to_download(
    signing_key, publisher, passed_request, client, outsider
):
    version = passed_request.agent_version
    PublishVersion(acting_user=publisher, agent_version=version).execute()
    attestation = Attestation.objects.get()
    client.force_login(publisher)
    page = client.get(f"/governance/versions/{version.pk}/").content.decode()
    link = f"/governance/versions/{version.pk}/attestations/{attestation.pk}.intoto.json"
    assert "<h2>Attestations</h2>" in page and link in page
    download = client.get(link)
    assert download.status_code == 200 and download.json() == attestation.envelope
    assert "attachment" in download["Content-Disposition"]
    client.force_login(outsider)
    assert client.get(link).status_code == 404


def test_the_worked_example_of_the_docs_verifies_by_hand(published, tmp_path, monkeypatch):
    """docs/attestations.md's few lines of Python, run as written on a real attestation."""
    attestation, key, version = published
    text = (Path(__file__).resolve().parents[2] / "docs/attestations.md").read_text()
    example = text.split("By hand, with a few lines", 1)[1].split("```python\n", 1)[1]
    example = example.split("```", 1)[0]
    (tmp_path / "deploy").mkdir()
    (tmp_path / "release.intoto.json").write_text(attestation.read_text())
    (tmp_path / "attestation-key.pub.pem").write_text(key.read_text())
    config = {"adapter": version.adapter, "config": version.config}
    (tmp_path / "deploy/agent-config.json").write_text(json.dumps(config))
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "docs/attestations.md", "exec"), {})  # raises if a check fails
    envelope = json.loads(attestation.read_text())
    body = base64.b64decode(envelope["payload"]).replace(b'"publish"', b'"pubLish"', 1)
    envelope["payload"] = base64.b64encode(body).decode()
    (tmp_path / "release.intoto.json").write_text(json.dumps(envelope))
    with pytest.raises(InvalidSignature):
        exec(compile(example, "docs/attestations.md", "exec"), {})


def test_the_key_command_makes_a_key_only_its_owner_reads_and_lists_the_published_ones(
    signing_key, publisher, passed_request, tmp_path, capsys
):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    made = tmp_path / "new.pem"
    call_command("attestation_keys", "create", "--file", str(made))
    assert made.stat().st_mode & 0o777 == 0o600 and b"PRIVATE KEY" in made.read_bytes()
    with pytest.raises(CommandError, match="never overwritten"):
        call_command("attestation_keys", "create", "--file", str(made))
    call_command("attestation_keys", "create", "--file", str(made), "--if-missing")
    PublishVersion(acting_user=publisher, agent_version=passed_request.agent_version).execute()
    capsys.readouterr()
    call_command("attestation_keys", "list")
    listed = capsys.readouterr().out
    assert f"{keyid_of(signing_key.public_key())}  " in listed and "(configured)" in listed
    assert "PRIVATE" not in listed


def test_a_rollback_and_the_retirement_it_causes_are_attested(
    signing_key, publisher, author, agent, passed_request
):
    from governance.actions.request_publication import RequestPublication
    from governance.actions.rollback_version import RollBackVersion
    from tests.support.governance import finish_gate_runs, make_version

    first = passed_request.agent_version
    PublishVersion(acting_user=publisher, agent_version=first).execute()
    RetireVersion(acting_user=publisher, agent_version=first, reason="pulled").execute()
    current = make_version(agent, author)
    finish_gate_runs(RequestPublication(acting_user=author, agent_version=current).execute())
    PublishVersion(acting_user=publisher, agent_version=current).execute()
    again = RequestPublication(acting_user=publisher, agent_version=first).execute()
    finish_gate_runs(again)
    RollBackVersion(acting_user=publisher, agent_version=first).execute()
    rolled = Attestation.objects.filter(agent_version=first).first()
    assert rolled.event == "rollback"
    predicate = statement(rolled)["predicate"]
    assert predicate["decision"]["publishRequest"] == again.pk
    replaced = Attestation.objects.filter(agent_version=current).first()
    assert replaced.event == "retire"
    assert statement(replaced)["predicate"]["replacedBy"] == f"v{first.number}"
    assert [a.event for a in Attestation.objects.filter(agent_version=first)] == [
        "rollback",
        "retire",
        "publish",
    ]
