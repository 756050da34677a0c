"""The publishing rules written once: the current request of a version
(`PublishRequest.objects.current_for`), staleness (`PublishRequest.stale_reason`), what the
enforcement level allows (`blocked_allows`) and what may happen next (`next_step`)."""

import pytest

from governance.actions.request_bypass import RequestBypass
from governance.actions.update_policy import UpdatePolicy
from governance.choices import Enforcement, RequestState
from governance.models import PublishingPolicy, PublishRequest
from governance.publishing.next_step import (
    ADVISORY,
    BYPASS,
    BYPASSED,
    NOTHING,
    PASSED,
    PUBLISH,
    REQUEST,
    WAIT,
    blocked_allows,
    next_step,
    what_it_waits_for,
)
from sherlock.core.errors import ActionConflict
from tests.support.governance import REASON

pytestmark = pytest.mark.django_db


def step_of(request):
    version = request.agent_version
    version.refresh_from_db()
    return next_step(version, request, PublishingPolicy.objects.in_force_for(version.agent))


def set_enforcement(policy, level):
    policy.enforcement = level
    policy.save(update_fields=["enforcement"])


def test_the_current_request_is_the_newest_one_not_superseded(passed_request, good_version):
    assert PublishRequest.objects.current_for(good_version) == passed_request
    PublishRequest.objects.filter(pk=passed_request.pk).update(state=RequestState.SUPERSEDED)
    assert PublishRequest.objects.current_for(good_version) is None


def test_a_rejected_request_stays_current(passed_request, good_version):
    PublishRequest.objects.filter(pk=passed_request.pk).update(state=RequestState.REJECTED)
    assert PublishRequest.objects.current_for(good_version) == passed_request
    step = step_of(PublishRequest.objects.get(pk=passed_request.pk))
    assert (step.step, step.code) == (REQUEST, "request_closed")


def test_a_version_without_a_request_asks_for_one(good_version, policy):
    step = next_step(good_version, None, policy)
    assert (step.step, step.code) == (REQUEST, "no_request")


def test_a_request_still_evaluating_waits(passed_request):
    PublishRequest.objects.filter(pk=passed_request.pk).update(state=RequestState.EVALUATING)
    step = step_of(PublishRequest.objects.get(pk=passed_request.pk))
    assert (step.step, step.code) == (WAIT, "evaluating")


def test_a_passed_decision_may_be_published(passed_request):
    step = step_of(passed_request)
    assert (step.step, step.route, step.code, step.why) == (PUBLISH, PASSED, "", "")
    assert (
        what_it_waits_for(step) == f"Request #{passed_request.pk} passed; it waits for a Publisher."
    )


def test_a_decision_under_an_older_policy_is_stale(admin_user, policy, passed_request):
    UpdatePolicy(acting_user=admin_user, policy=policy, changes={"repetitions": 2}).execute()
    step = step_of(passed_request)
    assert (step.step, step.code) == (REQUEST, "stale_decision")
    assert step.why.startswith("The publishing policy changed since this decision")
    assert "it can no longer be published: ask again" in what_it_waits_for(step)


def test_what_a_blocked_decision_allows_follows_the_enforcement_level(policy):
    assert blocked_allows(policy) == BYPASS
    set_enforcement(policy, Enforcement.ADVISORY)
    assert blocked_allows(policy) == PUBLISH
    set_enforcement(policy, Enforcement.HARD)
    assert blocked_allows(policy) == NOTHING


def test_a_blocked_decision_needs_a_bypass_under_a_soft_policy(blocked_request):
    step = step_of(blocked_request)
    assert (step.step, step.code) == (BYPASS, "blocked")
    assert step.why.endswith("publishing it needs an approved bypass.")


def test_an_approved_bypass_lets_a_blocked_decision_through(approved_bypass, blocked_request):
    step = step_of(blocked_request)
    assert (step.step, step.route, step.bypass) == (PUBLISH, BYPASSED, approved_bypass)


def test_a_blocked_decision_is_published_anyway_under_an_advisory_policy(policy, blocked_request):
    set_enforcement(policy, Enforcement.ADVISORY)
    step = step_of(blocked_request)
    assert (step.step, step.route) == (PUBLISH, ADVISORY)


def test_nothing_may_happen_to_a_blocked_decision_under_a_hard_policy(policy, blocked_request):
    set_enforcement(policy, Enforcement.HARD)
    step = step_of(blocked_request)
    assert (step.step, step.code) == (NOTHING, "blocked")
    assert what_it_waits_for(step).endswith("the policy is hard: it cannot be bypassed.")


def test_a_decision_under_an_older_policy_cannot_be_bypassed(admin_user, policy, blocked_request):
    # Publishing would refuse it as stale: a bypass of it could never be used.
    UpdatePolicy(acting_user=admin_user, policy=policy, changes={"repetitions": 2}).execute()
    with pytest.raises(ActionConflict) as refused:
        RequestBypass(
            acting_user=admin_user, publish_request=blocked_request, reason=REASON
        ).execute()
    assert refused.value.code == "stale_decision"
