"""The Publish page of the nav: every agent version the user may see, newest first, with its
state, whether it is live, where its publication stands and a link to its publish page (where
each verb is). It reads one row per version and a constant number of queries per page (the
latest request's state is a subquery), paged like the runs list."""

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import F, OuterRef, Q, Subquery
from django.shortcuts import render

from agents.choices import VersionState
from agents.models import Agent, AgentVersion
from governance.choices import RequestState
from governance.models import PublishRequest
from sherlock.core.permissions import missing_role_text

PER_PAGE = 50

# Where a version's publication stands, from its latest request (superseded ones are out, as
# on the publish page: `PublishRequest.objects.current_for`).
STANDING = {
    None: "not requested",
    RequestState.EVALUATING: "gate runs evaluating",
    RequestState.PASSED: "passed: waits for a Publisher",
    RequestState.BLOCKED: "blocked: publishable only through an Admin's bypass",
    RequestState.PUBLISHED: "published",
    RequestState.BYPASSED: "published through a bypass",
    RequestState.REJECTED: "rejected: ask again",
}
FILTERS = {
    "waiting": Q(request_state__in=[RequestState.EVALUATING, RequestState.PASSED]),
    "blocked": Q(request_state=RequestState.BLOCKED),
    "live": Q(agent__live_version=F("pk")),
    **{state.value: Q(state=state) for state in VersionState},
}


@login_required
def versions_page(request):
    latest = PublishRequest.objects.current().filter(agent_version=OuterRef("pk"))
    versions = (
        AgentVersion.objects.for_user(request.user)
        .select_related("agent")
        .annotate(
            request_state=Subquery(latest.values("state")[:1]),
            request_id=Subquery(latest.values("pk")[:1]),
        )
        .order_by("agent__slug", "-number")
    )
    agent = request.GET.get("agent", "")
    if agent:
        versions = versions.filter(agent__slug=agent)
    show = request.GET.get("show", "")
    if show in FILTERS:
        versions = versions.filter(FILTERS[show])
    page = Paginator(versions, PER_PAGE).get_page(request.GET.get("page"))
    # The agent is a picker (/pick/agent/, by slug): the page lists no agents, and asks only
    # whether the person sees any (their empty state names the missing role).
    sees_agents = bool(page.object_list) or Agent.objects.for_user(request.user).exists()
    for version in page:
        version.live = version.agent.live_version_id == version.pk
        version.standing = STANDING.get(version.request_state, version.request_state)
    return render(
        request,
        "governance/versions.html",
        {
            "page": page,
            "agent": agent,
            "show": show,
            "filters": [
                ("", "all"),
                ("waiting", "waiting"),
                ("blocked", "blocked"),
                ("live", "live"),
                ("draft", "drafts"),
                ("retired", "retired"),
            ],
            "current": "publish",
            "no_role": "" if sees_agents else missing_role_text("versions"),
        },
    )
