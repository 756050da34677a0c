"""`manage.py gate`: the CI gate reads or requests a version's decision, waits for its runs and
exits 0 (passed), 1 (blocked) or 2 (an incomplete verdict, or an error)."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from governance.choices import Enforcement, RequestState
from governance.models import PublishRequest


def gate(*args):
    """Run the command; returns (exit code, stdout)."""
    from io import StringIO

    out = StringIO()
    try:
        call_command("gate", *args, stdout=out)
    except SystemExit as exit_:
        return exit_.code, out.getvalue()
    except CommandError as error:
        return error.returncode, str(error)
    return 0, out.getvalue()


def test_a_passed_decision_exits_0_and_prints_the_gate_table(passed_request):
    code, out = gate("support-bot")
    assert code == 0
    assert "publish request #" in out and "case pass rate" in out and "case_pass_rate" not in out
    assert "release: pass" in out


def test_a_blocked_decision_exits_1_and_names_the_first_failing_gate(blocked_request):
    code, out = gate("support-bot", "--version", "1")
    assert code == 1
    assert "release: blocked (first failing: false success)" in out


def test_a_decision_blocked_for_want_of_evidence_exits_2_not_1(policy, good_version, author):
    """A trial in error: the verdict is incomplete (evidence missing, nothing failed), as
    `manage.py evaluate` and the verdict API say; the request is blocked (fail closed), and the
    gate exits 2, never 1."""
    from governance.actions.request_publication import RequestPublication
    from tests.support.governance import finish_gate_runs

    request = RequestPublication(acting_user=author, agent_version=good_version).execute()
    request = finish_gate_runs(request, errored=1)
    assert request.state == RequestState.BLOCKED
    assert request.decision["verdict"]["outcome"] == "incomplete"
    code, out = gate("support-bot", "--version", "1")
    assert code == 2, out
    assert "the verdict is incomplete" in out
    assert "release: incomplete (evidence missing, nothing failed: run the gate again)" in out
    assert "missing: 1 trial(s) in error: the agent (python " in out


def test_an_advisory_policy_reports_a_blocked_decision_but_exits_0(policy, blocked_request):
    policy.enforcement = Enforcement.ADVISORY
    policy.save(update_fields=["enforcement"])
    code, out = gate("support-bot", "--version", "1")
    assert code == 0 and "advisory" in out


@pytest.mark.parametrize(
    "args,message",
    [
        (("no-such-bot",), "no agent"),
        (("support-bot", "--version", "9"), "has no version 9"),
        (("support-bot",), "pass --user"),
        (("support-bot", "--user", "nobody"), "no user named"),
        (("support-bot", "--user", "publisher"), "request refused"),
    ],
)
def test_errors_exit_2(args, message, good_version, policy, publisher):
    code, out = gate(*args)
    assert code == 2
    assert message in out


def test_an_unexpected_error_exits_2_not_1(monkeypatch, blocked_request):
    """Exit 1 is the verdict "blocked"; a database that went away is no verdict."""
    from django.db import OperationalError

    from governance.models import PublishingPolicy

    def down(*args, **kwargs):
        raise OperationalError("connection failed: server closed\n\tthe connection unexpectedly")

    monkeypatch.setattr(PublishingPolicy.objects, "in_force_for", down)
    code, out = gate("support-bot", "--version", "1")
    assert code == 2
    assert out == (
        "unexpected error, no verdict: OperationalError: connection failed: server closed "
        "the connection unexpectedly"
    )


def test_from_the_command_line_an_unexpected_error_is_one_line_on_stderr(monkeypatch, capfd, db):
    from governance.management.commands import gate as gate_module

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(gate_module.Agent.objects, "filter", broken)
    with pytest.raises(SystemExit) as exit_:
        gate_module.Command().run_from_argv(["manage.py", "gate", "support-bot"])
    assert exit_.value.code == 2
    err = capfd.readouterr().err
    assert err.strip().splitlines() == [
        "CommandError: unexpected error, no verdict: RuntimeError: a bug"
    ]


def test_waiting_for_runs_that_do_not_finish_times_out_with_2(good_version, policy, author):
    code, out = gate("support-bot", "--user", "author", "--wait", "0")
    assert code == 2 and "timed out" in out
    assert PublishRequest.objects.get().state == RequestState.EVALUATING


@pytest.mark.slow
def test_it_requests_waits_for_the_real_gate_runs_and_reports(live_db, policy, author, agent):
    # `echo` reports no cost, so the contract's coverage gate blocks it (fail closed).
    from tests.support.governance import make_version

    make_version(agent, author, good=True)
    code, out = gate("support-bot", "--user", "author", "--wait", "60", "--poll", "0.1")
    assert code == 1, out
    assert "requested publication of support-bot v1" in out
    assert "release: blocked (first failing: coverage)" in out
    assert PublishRequest.objects.get().state == RequestState.BLOCKED


@pytest.fixture
def client_version(agent, author):
    """A `client` version: its code runs in the team's CI, its gate runs wait for uploads."""
    from agents.models import AgentVersion

    return AgentVersion.objects.create(
        agent=agent, number=1, name="abc123", adapter="client", config={}, created_by=author
    )


def test_a_client_version_is_not_requested_here_but_sent_to_sherlock_gate(
    policy, client_version, author
):
    code, out = gate("support-bot", "--version", "1", "--user", "author")
    assert code == 2
    assert "runs on the client" in out
    assert "sherlock gate --agent support-bot --version abc123 --task" in out
    assert "docs/client-cli.md" in out
    assert not PublishRequest.objects.exists()  # nothing was requested for nobody to run


def test_a_client_versions_waiting_gate_runs_are_named_at_once_not_waited_for(
    policy, client_version, author
):
    from governance.actions.request_publication import RequestPublication

    request = RequestPublication(acting_user=author, agent_version=client_version).execute()
    [run] = request.runs.all()
    assert run.status == "waiting"
    code, out = gate("support-bot", "--version", "1", "--wait", "30")
    assert code == 2
    assert f"gate run(s) #{run.pk} of publish request #{request.pk} wait for the client" in out
    assert "sherlock gate --agent support-bot" in out and "timed out" not in out


def test_a_client_versions_decision_is_read_as_any_other(policy, client_version, author):
    from governance.actions.request_publication import RequestPublication
    from tests.support.governance import finish_gate_runs

    request = RequestPublication(acting_user=author, agent_version=client_version).execute()
    finish_gate_runs(request)
    code, out = gate("support-bot", "--version", "1")
    assert code == 0, out
    assert "release: pass" in out
