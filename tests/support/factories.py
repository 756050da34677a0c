"""Factories for tests: small functions that build valid objects with sensible defaults."""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from agents.models import Agent, AgentVersion
from evaluations.models import Case, CaseVersion, Check, Dataset, DatasetVersion

PASSWORD = "correct horse battery staple"


def api(user):
    """An API client authenticated as `user` (no token: the API's permissions still apply)."""
    client = APIClient()
    client.force_authenticate(user)
    return client


def user(username, role=None, **extra):
    model = get_user_model()
    obj = model.objects.create_user(username=username, password=PASSWORD, is_staff=True, **extra)
    if role:
        # What GrantRole leaves, without its audit entry: the grant and the group membership.
        from governance.models import RoleGrant

        RoleGrant.objects.create(user=obj, role=role, scope="global", reason="test persona")
        obj.groups.add(Group.objects.get(name=role))
    return model.objects.get(pk=obj.pk)


def agent(slug="support-bot", **extra):
    return Agent.objects.create(slug=slug, name=extra.pop("name", slug.title()), **extra)


def agent_version(
    agent_obj=None, number=None, callable_path="tests.support.agents_under_test.echo", **config
):
    agent_obj = agent_obj or agent()
    number = number or (agent_obj.versions.count() + 1)
    return AgentVersion.objects.create(
        agent=agent_obj,
        number=number,
        adapter="python",
        config={"callable": callable_path, **config},
    )


def dataset(slug="support-basics"):
    return Dataset.objects.create(slug=slug, name=slug.title())


def dataset_version(dataset_obj=None, cases=(), checks=(), frozen=True):
    """`cases`: (key, input, extra fields) tuples; `checks`: Check field dicts."""
    from django.utils import timezone

    dataset_obj = dataset_obj or dataset()
    version = DatasetVersion.objects.create(
        dataset=dataset_obj, number=dataset_obj.versions.count() + 1
    )
    for position, fields in enumerate(checks):
        check = Check(dataset_version=version, position=position, **fields)
        check.clean()  # as every real save path does: params validated, defaults filled in
        check.save()
    for key, case_input, extra in cases:
        case, _ = Case.objects.get_or_create(dataset=dataset_obj, key=key)
        CaseVersion.objects.create(dataset_version=version, case=case, input=case_input, **extra)
    if frozen:
        version.frozen_at = timezone.now()
        version.save(update_fields=["frozen_at"])
    return version


def start_run(builder, version, dataset_version, capture, reps=1, execute=True, **options):
    """A run started as a Builder starts one (StartRun); `capture` is pytest-django's
    `django_capture_on_commit_callbacks`, so with `execute` the shards it enqueues on commit run
    here, in django-q2's sync mode. Returns the run as stored afterwards."""
    from evaluations.actions.start_run import StartRun

    with capture(execute=execute):
        run = StartRun(
            acting_user=builder,
            agent_version=version,
            dataset_version=dataset_version,
            repetitions=reps,
            **options,
        ).execute()
    run.refresh_from_db()
    return run


def planned_run(builder, version, dataset_version):
    """A run planned and enqueued with the broker out of the way: nobody runs its shards, so
    the test plays the workers itself."""
    from django_q.conf import Conf

    from evaluations.actions.start_run import StartRun

    Conf.SYNC = False
    try:
        return StartRun(
            acting_user=builder, agent_version=version, dataset_version=dataset_version
        ).execute()
    finally:
        Conf.SYNC = True


def cost_line(**fields):
    """A saved line of the cost ledger, written as the engine and the judge write theirs
    (`write_cost_lines`: with the daily totals the cost page reads)."""
    from evaluations.costs.ledger import write_cost_lines
    from evaluations.models import CostEntry

    line = CostEntry(**fields)
    write_cost_lines([line])
    return line
