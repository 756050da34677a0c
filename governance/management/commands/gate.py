"""`manage.py gate AGENT_SLUG`: the CI gate. Exit 0 passed, 1 blocked, 2 an incomplete verdict
(blocked for want of evidence, never a failure) or an error."""

import time

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from agents.choices import Adapter, VersionState
from agents.models import Agent
from evaluations.choices import RUN_TERMINAL, RunStatus
from evaluations.verdict import INCOMPLETE, INSUFFICIENT, PASSED
from governance.actions.decide_publish_request import DecidePublishRequest
from governance.actions.request_publication import RequestPublication
from governance.choices import RequestState
from governance.models import PublishingPolicy, PublishRequest
from governance.publishing.decision import (
    PASS,
    blocking_gate,
    gate_label,
    gate_rows,
    missing_of,
    outcome_of,
    release_of,
)
from governance.publishing.next_step import PUBLISH, blocked_allows
from sherlock.core.commands import ERROR, VerdictCommand
from sherlock.core.errors import ActionError


def client_refusal(agent, version):
    """What to do instead for a `client` version: its code runs in the team's CI."""
    name = version.name or version.number
    return (
        f"{version} runs on the client (the team's own code): run its gate from CI with "
        f"`sherlock gate --agent {agent.slug} --version {name} --task package.module:function`, "
        "which requests publication, fulfils the gate runs and awaits the decision "
        "(docs/client-cli.md)"
    )


class Command(VerdictCommand):
    help = (
        "Request (with --user) or read the gate decision of an agent version (default: its "
        "newest draft), wait for its runs, print the gate table. Exit 0 when it passed, 1 when "
        "it is blocked, 2 when it is blocked on an incomplete verdict (evidence missing) or on "
        "error (unknown agent or version, timeout, a refused request, or any unexpected failure "
        "such as an unreachable database)."
    )

    def add_arguments(self, parser):
        # `--version N` is the agent's version here; Django's own `--version` (its release
        # number) gives way to it.
        parser._optionals.conflict_handler = "resolve"
        parser.add_argument("agent_slug")
        parser.add_argument("--version", type=int, help="version number (default: newest draft)")
        parser.add_argument(
            "--wait", type=float, default=600, help="seconds to wait for the gate runs (600)"
        )
        parser.add_argument(
            "--user", help="request publication as this user (a Builder) when none is current"
        )
        parser.add_argument("--poll", type=float, default=1.0, help="seconds between checks (1)")

    def handle(self, *args, agent_slug, version, wait, user, poll, **options):
        agent = Agent.objects.filter(slug=agent_slug).first()
        if agent is None:
            raise CommandError(f"no agent {agent_slug!r}", returncode=ERROR)
        versions = agent.versions.order_by("-number")
        target = (
            versions.filter(number=version).first()
            if version is not None
            else versions.filter(state=VersionState.DRAFT).first()
        )
        if target is None:
            which = f"version {version}" if version is not None else "draft version"
            raise CommandError(f"{agent_slug} has no {which}", returncode=ERROR)
        request = self.current_request(agent, target, user)
        request = self.wait_for_decision(request, wait, poll)
        self.print_table(agent, target, request)
        release = release_of(request.decision)
        if release == PASS:
            return
        if blocked_allows(request.policy) == PUBLISH:
            self.stdout.write("advisory policy: the gate failed, but it only reports.")
            return
        verdict = (request.decision or {}).get("verdict") or {}
        if verdict.get("outcome") == INCOMPLETE:
            # Blocked for want of evidence (trials in error, results unscored, a run that did
            # not complete): no verdict, never a failure (`manage.py evaluate` exits 2 too).
            self.stdout.write("the verdict is incomplete: evidence is missing, nothing failed.")
            raise SystemExit(ERROR)
        if verdict.get("outcome") == INSUFFICIENT:
            # An interval straddles a threshold: nothing failed, more cases would decide it.
            self.stdout.write("insufficient evidence: nothing failed; more cases would decide it.")
            raise SystemExit(ERROR)
        raise SystemExit(1)

    def current_request(self, agent, version, username):
        request = PublishRequest.objects.select_related("policy").current_for(version)
        in_force = PublishingPolicy.objects.in_force_for(agent)
        # A rejected request is current but closed, and a stale one speaks for another
        # configuration or policy: either is asked again.
        if request is not None and request.leads_to(version, in_force):
            return request
        if version.adapter == Adapter.CLIENT:
            # Its gate runs would wait for uploads that nobody sends from here (docs/client.md).
            raise CommandError(client_refusal(agent, version), returncode=ERROR)
        if not username:
            why = (
                "no publish request"
                if request is None
                else "a rejected publish request"
                if request.state == RequestState.REJECTED
                else "a stale decision"
            )
            raise CommandError(
                f"{version} has {why}; pass --user USERNAME to request publication",
                returncode=ERROR,
            )
        acting = get_user_model().objects.filter(username=username).first()
        if acting is None:
            raise CommandError(f"no user named {username!r}", returncode=ERROR)
        try:
            created = RequestPublication(acting_user=acting, agent_version=version).execute()
        except ActionError as exc:
            raise CommandError(f"request refused: {exc}", returncode=ERROR) from None
        self.stdout.write(f"requested publication of {version}: publish request #{created.pk}")
        return created

    def wait_for_decision(self, request, wait, poll):
        deadline = time.monotonic() + max(wait, 0)
        while True:
            request = PublishRequest.objects.select_related("policy", "agent_version__agent").get(
                pk=request.pk
            )
            if request.state != RequestState.EVALUATING:
                return request
            runs = list(request.runs.values_list("pk", "status"))
            statuses = [status for _, status in runs]
            waiting = [pk for pk, status in runs if status == RunStatus.WAITING]
            if waiting:
                # A client version's gate runs wait for the team's CI: waiting here would only
                # time out (docs/client-cli.md).
                version = request.agent_version
                raise CommandError(
                    f"gate run(s) {', '.join(f'#{pk}' for pk in waiting)} of publish request "
                    f"#{request.pk} wait for the client. " + client_refusal(version.agent, version),
                    returncode=ERROR,
                )
            if all(status in RUN_TERMINAL for status in statuses):
                # The runs are done but no decision was stored (a lost `run_finished`): make it.
                DecidePublishRequest(publish_request_id=request.pk).execute()
                continue
            if time.monotonic() >= deadline:
                done = sum(status in RUN_TERMINAL for status in statuses)
                raise CommandError(
                    f"timed out after {wait:g}s: {done}/{len(statuses)} gate runs finished "
                    f"(publish request #{request.pk})",
                    returncode=ERROR,
                )
            time.sleep(max(0.05, min(poll, deadline - time.monotonic())))

    def print_table(self, agent, version, request):
        decision = request.decision
        policy = request.policy
        write = self.stdout.write
        write(
            f"{agent.slug} v{version.number} - publish request #{request.pk} ({request.state}) - "
            f"policy {policy.name} v{policy.version} ({policy.enforcement})"
        )
        runs = decision.get("runs") or []
        for run in runs:
            write(
                f"  run #{run.get('id')} on {run.get('dataset')} v{run.get('dataset_version')}: "
                f"{run.get('status')}"
            )
        rows = gate_rows(decision)
        width = max([len(name) for name, _, _ in rows] + [4])
        write(f"  {'gate':<{width}}  {'status':<6}  detail")
        for name, status, detail in rows:
            write(f"  {name:<{width}}  {status:<6}  {detail}")
        failing = decision.get("first_failing_gate")
        outcome = outcome_of(decision)
        if outcome == PASSED:
            verdict = "pass"
        elif outcome == INCOMPLETE:
            verdict = "incomplete (evidence missing, nothing failed: run the gate again)"
        elif outcome == INSUFFICIENT:
            verdict = (
                f"insufficient evidence at {gate_label(blocking_gate(decision))} (nothing "
                "failed: more cases would decide it)"
            )
        else:
            verdict = f"blocked (first failing: {gate_label(failing)})"
        write(f"release: {verdict}")
        for item in missing_of(decision):
            write(f"  missing: {item.get('detail')}; to add it: {item.get('fix')}")
