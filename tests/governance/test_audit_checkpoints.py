"""Signed checkpoints of the audit chain's head: written by `audit_checkpoint` and the schedule,
and `verify_audit --checkpoints` sees what the chain alone cannot (a removed tail, a chain
re-computed after an edit), with the triggers dropped as a database-level attacker would."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from governance import tasks
from governance.audit.checkpoints import key_id, make_checkpoint, to_line
from governance.models import AuditEntry, verify_chain
from sherlock.core.audit import audit
from tests.support.audit import (
    AUDIT_KEY,
    cut_tail,
    drop_audit_trigger,
    recompute_chain,
    rewrite_entry,
    use_checkpoints,
)
from tests.support.loopback_webhook import LoopbackReceiver

KEY = AUDIT_KEY


@pytest.fixture
def checkpoint_file(settings, tmp_path):
    return use_checkpoints(settings, tmp_path)


def entries(count):
    return [audit("governance.test.entry", after={"n": n}).sequence for n in range(count)]


@pytest.fixture
def anchored(db, checkpoint_file):
    """Five entries: a checkpoint after the third and one after the fifth."""
    first = entries(3)
    call_command("audit_checkpoint")
    second = entries(2)
    call_command("audit_checkpoint")
    return first + second


def verify(capsys, path):
    """Run `verify_audit --checkpoints path`: (exit code, stdout, stderr)."""
    try:
        call_command("verify_audit", checkpoints=str(path))
        code = 0
    except SystemExit as exit_info:
        code = exit_info.code
    out = capsys.readouterr()
    return code, out.out, out.err


def checkpoints_in(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def checkpoints_in_last_line(path):
    return json.loads(path.read_text().splitlines()[-1])


# --- Writing ----------------------------------------------------------------------------------


def test_audit_checkpoint_signs_the_head(anchored, checkpoint_file, capsys):
    written = checkpoints_in(checkpoint_file)
    assert [c["seq"] for c in written] == [anchored[2], anchored[4]]
    head = AuditEntry.objects.get(sequence=anchored[4])
    assert written[-1]["hash"] == head.hash
    assert written[-1]["key_id"] == key_id(KEY)
    assert len(written[-1]["sig"]) == 64 and written[-1]["at"].endswith("Z")
    (newest,) = entries(1)
    call_command("audit_checkpoint")
    out = capsys.readouterr().out
    assert f"checkpoint of #{newest} (" in out and f"written to {checkpoint_file}" in out


def test_a_checkpoint_is_not_an_audit_entry(anchored):
    # Auditing it would move the head it signs, and every tick would sign again.
    assert AuditEntry.objects.order_by("-sequence").first().sequence == anchored[-1]


def test_an_unmoved_head_is_not_signed_again(anchored, checkpoint_file, capsys):
    capsys.readouterr()
    call_command("audit_checkpoint")
    assert "head has not moved" in capsys.readouterr().out
    assert len(checkpoints_in(checkpoint_file)) == 2


def test_the_schedule_signs_when_the_head_moved_and_the_interval_passed(
    db, checkpoint_file, settings
):
    from datetime import timedelta

    from django.utils import timezone

    settings.SHERLOCK_AUDIT_CHECKPOINT_MINUTES = 5
    (first,) = entries(1)
    assert tasks.write_audit_checkpoint() == first  # no checkpoint yet: one at once
    assert tasks.write_audit_checkpoint() is None  # the head has not moved
    (second,) = entries(1)
    assert tasks.write_audit_checkpoint() is None  # moved, but the last one is too young
    # Five minutes later (the last checkpoint re-signed as if written then).
    old = timezone.now() - timedelta(minutes=6)
    checkpoint_file.write_text(to_line(make_checkpoint(first, _hash(first), KEY, old)))
    assert tasks.write_audit_checkpoint() == second
    assert [c["seq"] for c in checkpoints_in(checkpoint_file)] == [first, second]


def _hash(sequence):
    return AuditEntry.objects.get(sequence=sequence).hash


def test_a_last_checkpoint_dated_in_the_future_does_not_silence_the_schedule(db, checkpoint_file):
    from datetime import timedelta

    from django.utils import timezone

    first, second = entries(2)
    later = timezone.now() + timedelta(days=365)
    checkpoint_file.write_text(to_line(make_checkpoint(first, _hash(first), KEY, later)))
    assert tasks.write_audit_checkpoint() == second


def test_the_schedule_is_created_once_by_a_migration(db):
    from importlib import import_module

    from django.apps import apps
    from django_q.models import Schedule

    migration = import_module("governance.migrations.0006_audit_checkpoint_schedule")
    assert Schedule.objects.filter(name=migration.NAME).count() == 1  # the test DB migrated
    migration.schedule_checkpoints(apps, None)  # idempotent
    schedule = Schedule.objects.get(name=migration.NAME)
    assert schedule.func == "governance.tasks.write_audit_checkpoint"
    assert (schedule.schedule_type, schedule.minutes, schedule.repeats) == ("I", 1, -1)


def test_a_rotated_key_starts_a_new_file(anchored, settings):
    settings.SHERLOCK_AUDIT_KEY = "another-audit-key-of-at-least-32-characters"
    entries(1)
    with pytest.raises(CommandError, match="new file"):
        call_command("audit_checkpoint")


def test_without_a_destination_the_command_says_where_to_write(db, settings, tmp_path):
    use_checkpoints(settings, tmp_path)
    settings.SHERLOCK_AUDIT_CHECKPOINT_FILE = None
    entries(1)
    with pytest.raises(CommandError, match="SHERLOCK_AUDIT_CHECKPOINT_FILE"):
        call_command("audit_checkpoint")


# --- Without a key: off, and said so ----------------------------------------------------------


def test_without_a_key_the_command_refuses(db, settings):
    settings.SHERLOCK_AUDIT_KEY = ""
    entries(1)
    with pytest.raises(CommandError, match="checkpoints are off: SHERLOCK_AUDIT_KEY is not set"):
        call_command("audit_checkpoint")
    assert tasks.write_audit_checkpoint() is None  # the schedule's tick does nothing


def test_without_a_key_verify_says_checkpoints_are_off(db, settings, capsys):
    settings.SHERLOCK_AUDIT_KEY = ""
    settings.SHERLOCK_AUDIT_CHECKPOINT_FILE = None
    entries(1)
    call_command("verify_audit")
    out = capsys.readouterr().out
    assert "audit chain intact" in out
    assert "checkpoints off (SHERLOCK_AUDIT_KEY is not set)" in out
    assert "a removed tail or a re-computed chain would not be seen" in out


def test_without_a_key_a_checkpoint_file_cannot_pass(anchored, checkpoint_file, settings, capsys):
    settings.SHERLOCK_AUDIT_KEY = ""
    code, out, err = verify(capsys, checkpoint_file)
    assert code == 2
    assert "not verified: SHERLOCK_AUDIT_KEY is not set" in err
    assert "checkpoints verified" not in out


# --- Verifying --------------------------------------------------------------------------------


def test_a_clean_chain_verifies_against_its_checkpoints(anchored, checkpoint_file, capsys):
    code, out, err = verify(capsys, checkpoint_file)
    assert (code, err) == (0, "")
    assert "audit chain intact" in out
    assert f"checkpoints verified: 2 in {checkpoint_file}, the last signs #{anchored[-1]} (" in out


def test_verify_audit_reads_the_configured_file_by_default(anchored, capsys):
    call_command("verify_audit")
    assert "checkpoints verified: 2" in capsys.readouterr().out


def test_a_removed_tail_passes_the_chain_but_not_the_checkpoints(anchored, checkpoint_file, capsys):
    drop_audit_trigger()
    cut_tail(anchored[3])  # the last two entries
    assert verify_chain()[1] is None  # what is left is a whole chain: the chain alone is blind
    code, _, err = verify(capsys, checkpoint_file)
    assert code == 1
    assert (
        f"{checkpoint_file}:2: entry #{anchored[4]} missing: the log ends at #{anchored[2]} "
        f"but a checkpoint signed #{anchored[4]}"
    ) in err
    assert "audit chain broken" not in err


def test_a_tail_cut_and_checkpointed_again_is_seen(anchored, checkpoint_file, capsys):
    # The attacker cuts the tail, then the schedule signs the shorter log: the earlier
    # checkpoint's entry is still missing.
    drop_audit_trigger()
    cut_tail(anchored[3])
    entries(1)
    call_command("audit_checkpoint")
    code, _, err = verify(capsys, checkpoint_file)
    assert code == 1
    assert (
        f"{checkpoint_file}:2: entry #{anchored[4]} missing: the log ends at #{anchored[3]}" in err
    )
    assert "checkpoints failed: 1 problem(s), 3 line(s) read from" in err


def test_a_rewritten_entry_breaks_the_chain(anchored, checkpoint_file, capsys):
    drop_audit_trigger()
    rewrite_entry(anchored[1], "nothing to see")
    code, _, err = verify(capsys, checkpoint_file)
    assert code == 1
    assert f"audit chain broken at sequence {anchored[1]}" in err


def test_a_rewritten_checkpointed_entry_fails_its_checkpoint_too(anchored, checkpoint_file, capsys):
    drop_audit_trigger()
    rewrite_entry(anchored[4], "nothing to see")
    code, _, err = verify(capsys, checkpoint_file)
    assert code == 1
    assert f"audit chain broken at sequence {anchored[4]}" in err
    assert f"hash of #{anchored[4]} differs from the signed checkpoint" in err
    assert "no longer hashes to its stored hash" in err


def test_a_recomputed_chain_passes_the_chain_but_not_the_checkpoints(
    anchored, checkpoint_file, capsys
):
    drop_audit_trigger()
    rewrite_entry(anchored[1], "nothing to see")
    recompute_chain(anchored[1])
    assert verify_chain()[1] is None  # re-hashed: the chain alone is blind
    code, _, err = verify(capsys, checkpoint_file)
    assert code == 1
    assert f"{checkpoint_file}:1: hash of #{anchored[2]} differs from the signed checkpoint" in err
    assert f"{checkpoint_file}:2: hash of #{anchored[4]} differs from the signed checkpoint" in err
    assert "checkpoints failed: 2 problem(s), 2 line(s) read from" in err


def test_a_recompute_after_the_last_checkpoint_is_beyond_its_reach(
    anchored, checkpoint_file, capsys
):
    # The threat model's limit, stated in the README: entries after the last checkpoint are
    # vouched for by nothing outside the database; the report says how many there are.
    after = entries(2)
    drop_audit_trigger()
    rewrite_entry(after[0], "nothing to see")
    recompute_chain(after[0])
    code, out, _ = verify(capsys, checkpoint_file)
    assert code == 0
    assert "2 entries after it are not anchored yet" in out


def test_a_forged_checkpoint_fails_its_signature(anchored, checkpoint_file, capsys):
    # Someone who cannot sign re-points the last checkpoint at their re-computed head.
    drop_audit_trigger()
    rewrite_entry(anchored[3], "nothing to see")
    recompute_chain(anchored[3])
    lines = checkpoints_in(checkpoint_file)
    lines[-1]["hash"] = _hash(anchored[4])
    checkpoint_file.write_text("".join(to_line(c) for c in lines))
    code, _, err = verify(capsys, checkpoint_file)
    assert code == 1
    assert f"{checkpoint_file}:2: signature invalid" in err


def test_checkpoints_under_another_key_fail_naming_the_keys(
    anchored, checkpoint_file, settings, capsys
):
    settings.SHERLOCK_AUDIT_KEY = "another-audit-key-of-at-least-32-characters"
    code, _, err = verify(capsys, checkpoint_file)
    assert code == 1
    assert f"signature invalid (it names key {key_id(KEY)}" in err
    assert "another key, or a forged line" in err


def test_a_line_that_is_no_checkpoint_is_named(anchored, checkpoint_file, capsys):
    with checkpoint_file.open("a") as out:
        out.write('{"seq": 3}\n')
        out.write("garbage\n")
    code, _, err = verify(capsys, checkpoint_file)
    assert code == 1
    assert f"{checkpoint_file}:3: not a checkpoint: missing hash, at, key_id, sig" in err
    assert f"{checkpoint_file}:4: not a checkpoint: not a JSON object" in err


def test_an_empty_checkpoint_file_anchors_nothing(db, checkpoint_file, capsys):
    entries(2)
    checkpoint_file.write_text("")
    code, _, err = verify(capsys, checkpoint_file)
    assert code == 1
    assert "no checkpoint: nothing anchors the log's" in err


def test_a_missing_checkpoint_file_cannot_be_verified(db, checkpoint_file, capsys):
    entries(1)
    code, _, err = verify(capsys, checkpoint_file.with_name("nowhere.jsonl"))
    assert code == 2
    assert "cannot read" in err


# --- The webhook destination -----------------------------------------------------------------


def test_checkpoints_go_to_subscribed_webhooks_and_verify_from_what_they_received(
    db, admin_user, settings, tmp_path, django_capture_on_commit_callbacks, capsys
):
    from governance.actions.create_webhook import CreateWebhook

    use_checkpoints(settings, tmp_path)
    settings.SHERLOCK_AUDIT_CHECKPOINT_FILE = None  # the webhook is the only destination
    settings.SHERLOCK_WEBHOOK_TIMEOUT = 5
    with LoopbackReceiver() as receiver:
        CreateWebhook(
            acting_user=admin_user, url=receiver.url, events=["audit.checkpoint"]
        ).execute()
        sequences = entries(2)
        with django_capture_on_commit_callbacks(execute=True):
            call_command("audit_checkpoint")
        with django_capture_on_commit_callbacks(execute=True):
            call_command("audit_checkpoint")  # the head has not moved: nothing sent
        received = receiver.received
    assert "head has not moved" in capsys.readouterr().out
    assert len(received) == 1
    delivery = json.loads(received[0]["body"])
    assert delivery["event"] == "audit.checkpoint"
    assert delivery["data"]["seq"] == sequences[-1]
    # The receiver keeps `data` as one line per delivery: that file verifies the log.
    kept = tmp_path / "received.jsonl"
    kept.write_text(to_line(delivery["data"]))
    assert verify(capsys, kept)[0] == 0
    drop_audit_trigger()
    cut_tail(sequences[-1])
    code, _, err = verify(capsys, kept)
    assert code == 1 and f"entry #{sequences[-1]} missing" in err


def test_a_line_cut_short_by_a_crash_does_not_swallow_the_next(anchored, checkpoint_file, capsys):
    with checkpoint_file.open("a") as out:
        out.write('{"seq": 9, "hash": "ab')  # the process died mid-write
    (newest,) = entries(1)
    call_command("audit_checkpoint")
    assert checkpoints_in_last_line(checkpoint_file)["seq"] == newest
    code, _, err = verify(capsys, checkpoint_file)
    assert code == 1  # the broken line is still reported, on its own
    assert f"{checkpoint_file}:3: not a checkpoint" in err
    assert ":4:" not in err


def test_checkpoints_in_any_order_verify(anchored, checkpoint_file, capsys):
    # A webhook receiver may keep a retried delivery after a later one.
    lines = checkpoint_file.read_text().splitlines(keepends=True)
    checkpoint_file.write_text("".join(reversed(lines)))
    assert verify(capsys, checkpoint_file)[0] == 0


def test_an_emptied_log_fails_every_checkpoint(anchored, checkpoint_file, capsys):
    drop_audit_trigger()
    cut_tail(1)  # every entry
    code, _, err = verify(capsys, checkpoint_file)
    assert code == 1
    assert f"entry #{anchored[2]} missing: the log is empty but a checkpoint signed" in err
    assert "checkpoints failed: 2 problem(s)" in err
