"""What the governance tests share: the gate case and check, versions good and bad, gate runs
finished as the engine would, API key clients, role grants and the personas of the role matrix.
"""

import contextlib
from datetime import timedelta
from decimal import Decimal
from unittest import mock

from django.utils import timezone
from guardian.shortcuts import assign_perm
from rest_framework.test import APIClient

from agents.models import AgentVersion
from evaluations.choices import BillingCoverage, OutcomeVerdict, RunStatus, TrialStatus
from evaluations.models import Run, Trial
from evaluations.signals import run_finished
from governance.models import APIKey
from governance.people.roles import OBJECT_PERMS

REASON = "Incident INC-4521: the refund flow is down and this fix must ship tonight."


TOOLS_CHECK = {
    "label": "Tools",
    "kind": "tools_used",
    "params": {"match": "any_order"},
    "threshold": 1.0,
}


def tool_case(key, question):
    return (key, question, {"expected_tools": [{"name": "kb.search"}]})


def make_version(agent, author, good=True):
    path = (
        "tests.support.agents_under_test.echo"
        if good
        else "tests.support.agents_under_test.scripted"
    )
    return AgentVersion.objects.create(
        agent=agent,
        number=agent.versions.count() + 1,
        adapter="python",
        config={"callable": path},
        created_by=author,
    )


def finish_gate_runs(request, passed=True, errored=0):
    """Finish a request's gate runs as the engine does: every trial completed with billed cost,
    a declared completion and its outcome (verified, or failed: a false success), the run's
    summary, then `run_finished`; the first `errored` trials of each run end in error instead
    (no transcript, no cost, as the engine leaves a trial whose agent raised). These tests
    exercise governance's side of the signal without running agents; the end-to-end scenario
    (test_api_scenario.py) runs the real engine."""
    for run in request.runs.all():
        Trial.objects.filter(run=run).update(
            status=TrialStatus.COMPLETED,
            finished_at=timezone.now(),
            cost_usd=Decimal("0.01"),
            billing_coverage=BillingCoverage.BILLED,
            declared_complete=True,
            outcome_verdict=OutcomeVerdict.VERIFIED if passed else OutcomeVerdict.FAILED,
        )
        in_error = list(
            Trial.objects.filter(run=run).order_by("pk").values_list("pk", flat=True)[:errored]
        )
        Trial.objects.filter(pk__in=in_error).update(
            status=TrialStatus.ERROR,
            error="RuntimeError: the agent raised",
            cost_usd=None,
            billing_coverage=BillingCoverage.MISSING,
            declared_complete=False,
            outcome_verdict="",
        )
        cases = run.trials_total // run.repetitions
        Run.objects.filter(pk=run.pk).update(
            status=RunStatus.COMPLETED,
            trials_done=run.trials_total,
            trials_error=len(in_error),
            finished_at=timezone.now(),
            summary={
                "cases": cases,
                "passed": cases if passed else 0,
                "case_pass_rate": 1.0 if passed else 0.0,
            },
        )
        run_finished.send(sender=Run, run_id=run.pk, status=str(RunStatus.COMPLETED))
    request.refresh_from_db()
    return request


def api_key(user, name="test client", days=30, **fields):
    """A new API key of `user` and its secret (what CreateAPIKey issues, without its audit, so
    tests that count audit entries see only their own)."""
    return APIKey.objects.create_key(
        user=user, name=name, expiry_date=timezone.now() + timedelta(days=days), **fields
    )


def key_client(secret):
    """A DRF client sending `Authorization: Token <secret>`, as an API caller does."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    return client


def auth_header(user):
    """The `Authorization` header an API caller acting as `user` sends (a new key of theirs)."""
    return f"Token {api_key(user)[1]}"


def api_client(user):
    """A DRF client authenticated with a new API key of `user`, as an API caller would be."""
    return key_client(api_key(user)[1])


def used_client(user):
    """`api_client`, with a key used a moment ago: its last use is not written again within the
    minute, so a test counting a request's queries sees what every later request costs."""
    return key_client(api_key(user, last_used_at=timezone.now())[1])


def grant_on(user, role, obj):
    """Give `user` the verbs of `role` on `obj` only (what GrantRole does, without its audit):
    the grant, and its verbs as guardian object permissions."""
    from governance.models import RoleGrant

    kind = obj._meta.model_name
    RoleGrant.objects.create(user=user, role=role, scope=kind, **{kind: obj}, reason="test")
    for codename in OBJECT_PERMS[role][kind]:
        assign_perm(codename, user, obj)
    return type(user).objects.get(pk=user.pk)  # a fresh permission cache


ROLES = ("Viewer", "Editor", "Builder", "Publisher", "Admin")


SCOPES = ("global", "here", "other")


PERSONAS = [(role, scope) for role in ROLES for scope in SCOPES] + [("outsider", None)]


# Who may, in the role matrix: the personas holding a verb on the agent under test (an Admin
# holds every verb; a grant on another agent gives nothing here).
BUILDERS = {("Builder", "global"), ("Builder", "here"), ("Admin", "global"), ("Admin", "here")}
PUBLISHERS = {
    ("Publisher", "global"),
    ("Publisher", "here"),
    ("Admin", "global"),
    ("Admin", "here"),
}
ADMINS = {("Admin", "global"), ("Admin", "here")}
GLOBAL_ADMINS = {("Admin", "global")}
EDITORS = {("Editor", "global"), ("Editor", "here"), ("Admin", "global")}


def split(allowed):
    """The personas of the matrix that may do something, and those who may not."""
    return [p for p in PERSONAS if p in allowed], [p for p in PERSONAS if p not in allowed]


def persona_id(value):
    return value if value is not None else "-"


def join_role(user, role):
    from django.contrib.auth.models import Group

    from governance.models import RoleGrant

    RoleGrant.objects.create(user=user, role=role, scope="global", reason="test")
    user.groups.add(Group.objects.get(name=role))
    return type(user).objects.get(pk=user.pk)


@contextlib.contextmanager
def clock_at(when):
    """Run the block as if it were `when`: what a grant "long ago" needs, since audit entries
    take their time from the clock and can never be edited afterwards."""
    with mock.patch("django.utils.timezone.now", return_value=when):
        yield


def assert_hidden_refusal(user, target_type, target_id, verb):
    """The one entry a 404 answered to `user`'s verb left (sherlock.core.hidden), returned."""
    from governance.models import AuditEntry

    entries = AuditEntry.objects.filter(action=f"{target_type}.refused", actor_id=user.pk)
    assert entries.count() == 1, list(entries.values("action", "target_id", "after"))
    entry = entries.get()
    assert entry.target_type == target_type and entry.target_id == str(target_id)
    assert entry.after["verb"] == verb and entry.after["code"] == "not_found"
    return entry


def assert_refusal_audited(user, status, *, target_type, target_id, verb, noun):
    """Next to each refusal of the matrix, its entry: a 404 leaves `<target_type>.refused`
    (`sherlock.core.hidden`), a 403 the action's own `governance.<noun>.refused`; an allowed
    call leaves neither."""
    from governance.models import AuditEntry

    hidden = AuditEntry.objects.filter(action=f"{target_type}.refused", actor_id=user.pk)
    denied = AuditEntry.objects.filter(action=f"governance.{noun}.refused", actor_id=user.pk)
    if status == 404:
        assert_hidden_refusal(user, target_type, target_id, verb)
        assert not denied.exclude(pk__in=hidden.values("pk")).exists()
    elif status == 403:
        assert denied.exists() and not hidden.exclude(pk__in=denied.values("pk")).exists()
    else:
        assert not hidden.exists() and not denied.exists()
