"""DecidePublishRequest: when the gate runs of a request have finished, make its decision."""

from django.db import transaction
from django.utils import timezone

from evaluations.choices import RUN_TERMINAL
from governance.actions._request_state import move_request
from governance.choices import RequestState, WebhookEvent
from governance.models import PublishRequest
from governance.publishing.decision import PASS, make_decision, outcome_of, release_of
from governance.webhooks import notify
from sherlock.core.actions import Action


class DecidePublishRequest(Action):
    """Store the decision of an `evaluating` request once every one of its runs (and of the live
    version's runs it pairs them with) is terminal:
    every gate with its numbers, the runs and the policy version (`make_decision`). The request
    becomes `passed` or `blocked`.

    This is the system's step (`acting_user` None), reached from the `run_finished` receiver,
    which may be delivered more than once and for several runs at the same moment, and from the
    `gate` command as a fallback. So it is idempotent: the request row is locked and the state
    moves by compare-and-set from `evaluating`; a request that is decided, or whose runs are
    still going, is left alone and None is returned.
    """

    noun = "request"
    verb = "decide"

    def __init__(self, *, publish_request_id, acting_user=None):
        super().__init__(acting_user=acting_user)
        self.publish_request_id = publish_request_id

    def execute(self):
        with transaction.atomic():
            return self.perform()

    def perform(self):
        request = (
            PublishRequest.objects.select_for_update()
            .select_related("policy", "agent_version__agent")
            .filter(pk=self.publish_request_id, state=RequestState.EVALUATING)
            .first()
        )
        if request is None:
            return None
        statuses = [
            *request.runs.values_list("status", flat=True),
            *request.live_runs.values_list("status", flat=True),
        ]
        if any(status not in RUN_TERMINAL for status in statuses):
            return None
        decision = make_decision(request)
        state = RequestState.PASSED if release_of(decision) == PASS else RequestState.BLOCKED
        decided_at = timezone.now()
        if not move_request(request, state, decision=decision, decided_at=decided_at):
            return None
        request.state, request.decision, request.decided_at = state, decision, decided_at
        self.audit(
            target=request,
            before={"state": RequestState.EVALUATING},
            after={
                "state": state,
                "release": decision.get("release"),
                "outcome": outcome_of(decision),
                "first_failing_gate": decision.get("first_failing_gate"),
                "policy": decision.get("policy"),
                "runs": [run.get("id") for run in decision.get("runs", [])],
            },
        )
        notify(
            WebhookEvent.DECISION_MADE,
            {
                "publish_request": request.pk,
                "agent": request.agent_version.agent.slug,
                "agent_version": request.agent_version.number,
                "state": state,
                "release": decision.get("release"),
                "outcome": outcome_of(decision),
                "first_failing_gate": decision.get("first_failing_gate"),
                "runs": [run.get("id") for run in decision.get("runs", [])],
            },
        )
        return request
