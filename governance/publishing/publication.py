"""Is this version published, by whom, and on what: the answer `sherlock verify` guards a deploy
with (`GET /api/v1/versions/{id}/publication/`, docs/client.md).

A version is published when its state is `published` (it is, or was last made, the live one).
Who published it and on which grounds is its newest publish request that was acted on (state
`published`, or `bypassed` when a bypass cleared a blocked gate): the request's decision (its
id and release verdict) and, when a bypass was used, that bypass (its reason and approver).
"""

from agents.choices import VersionState
from governance.choices import BypassState, RequestState
from governance.models import Bypass, PublishRequest
from governance.publishing.decision import release_of


def publication_of(version):
    """`{published, state, published_at, published_by, publish_request, decision, bypass}` of
    `version`; `decision` and `bypass` are None when nothing published it (two queries)."""
    request = PublishRequest.objects.select_related("published_by").published_for(version)
    answer = {
        "published": version.state == VersionState.PUBLISHED,
        "state": version.state,
        "is_live": version.agent.live_version_id == version.pk,
        "published_at": None,
        "published_by": None,
        "publish_request": None,
        "decision": None,
        "bypass": None,
    }
    if request is None:
        return answer
    answer.update(
        published_at=request.published_at,
        published_by=request.published_by.get_username() if request.published_by else None,
        publish_request=request.pk,
        decision={"id": request.pk, "outcome": release_of(request.decision or {})},
    )
    if request.state == RequestState.BYPASSED:
        bypass = (
            Bypass.objects.filter(publish_request=request, state=BypassState.USED)
            .select_related("approved_by")
            .order_by("-used_at", "-pk")
            .first()
        )
        if bypass is not None:
            answer["bypass"] = {
                "id": bypass.pk,
                "reason": bypass.reason,
                "approved_by": bypass.approved_by.get_username() if bypass.approved_by else None,
            }
    return answer
