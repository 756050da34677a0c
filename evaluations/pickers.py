"""The dataset and run pickers (sherlock.core.pickers): datasets, dataset versions (frozen,
drafts, or the drafts the person may add to) and runs, each as the person may see them."""

from django.db.models import Exists, OuterRef

from agents.models import Agent
from evaluations.models import Dataset, DatasetVersion, Run
from evaluations.reads import run_rights
from sherlock.core.pickers import Kind, int_param, register

STATES = {"frozen": {"frozen_at__isnull": False}, "draft": {"frozen_at__isnull": True}}


def datasets(action):
    def rows(user, params):
        return Dataset.objects.for_user(user, action).order_by("slug")

    return rows


def dataset_versions(user, params, action="view"):
    return _versions_asked(
        DatasetVersion.objects.for_user(user, action).select_related("dataset"), params
    )


def _versions_asked(found, params):
    """`found` narrowed by the picker's `state` and `dataset` parameters, in picker order."""
    state = params.get("state") or None
    if state is not None:
        if state not in STATES:
            raise ValueError("state: frozen or draft")
        found = found.filter(**STATES[state])
    dataset = int_param(params, "dataset")
    if dataset is not None:
        found = found.filter(dataset_id=dataset)
    return found.order_by("dataset__slug", "-number")


def dataset_versions_to_run(user, params):
    """The versions a run may be started on: `dataset_versions` of what the user may see, plus
    the datasets an agent they build is gated on (`evaluations.reads.run_rights`)."""

    return _versions_asked(run_rights.dataset_versions_to_run(user), params)


def datasets_to_run(user, params):

    return run_rights.datasets_to_run(user).order_by("slug")


def editable_drafts(user, params):
    return dataset_versions(user, params).drafts_to_edit(user)


def runs(user, params):
    return (
        Run.objects.for_user(user)
        .select_related("agent_version__agent", "dataset_version__dataset")
        .order_by("-pk")
    )


def agents_with_runs(user, params):
    """The agents of the runs the person may read (`Run.objects.for_user`): an Editor of a
    dataset, who holds no agent, still finds the agents run on it (the trends page)."""

    readable = Run.objects.for_user(user).filter(agent_version__agent=OuterRef("pk"))
    return Agent.objects.filter(Exists(readable)).order_by("slug")


def run_text(run):
    return f"#{run.pk} {run.agent_version} on {run.dataset_version} ({run.status})"


VERSION_WORDS = ("dataset__slug", "dataset__name")
register("dataset", Kind(datasets("view"), words=("slug", "name"), by=("pk", "slug")))
# The datasets the person may edit (and so label the results of: the labelling queue).
register(
    "dataset-to-edit",
    Kind(
        datasets("edit"),
        words=("slug", "name"),
        by=("pk", "slug"),
        none="No dataset you may edit matches: the Editor role on one is needed.",
    ),
)
register(
    "dataset-version",
    Kind(
        dataset_versions,
        VERSION_WORDS,
        "number",
        by=("pk", "number"),  # by number: one dataset's versions (the admin's compare page)
        none="No dataset version you may see matches: a dataset's versions are seen with a role "
        "on it, or a global one.",
    ),
)
# What a run may be started on (Start a run, schedules): a Builder's gate datasets too.
register(
    "dataset-version-to-run",
    Kind(
        dataset_versions_to_run,
        VERSION_WORDS,
        "number",
        by=("pk", "number"),
        none="No dataset version you may run matches: a run is started on a dataset you may see, "
        "or on one an agent you build is gated on.",
    ),
)
register(
    "dataset-to-run",
    Kind(
        datasets_to_run,
        words=("slug", "name"),
        by=("pk", "slug"),
        none="No dataset you may run matches: a run is started on a dataset you may see, or on "
        "one an agent you build is gated on.",
    ),
)
register(
    "dataset-draft",
    Kind(
        editable_drafts,
        VERSION_WORDS,
        "number",
        none="No draft you may edit matches: an Editor starts one with "
        "\u201cStart a new draft version\u201d on the dataset's page.",
    ),
)
register(
    "run",
    Kind(
        runs,
        words=("agent_version__agent__slug", "dataset_version__dataset__slug", "status"),
        number="pk",
        versions=("agent_version__number", "dataset_version__number"),
        text=run_text,
    ),
)
# The agents whose runs the person may read, whether or not they hold a role on the agent.
register(
    "agent-with-runs",
    Kind(
        agents_with_runs,
        words=("slug", "name"),
        by=("pk", "slug"),
        none="No agent with a run you may see matches.",
    ),
)
