"""Production traces in the labelling queue, and their labels in calibration: an Editor of the
dataset whose model check an online rule reuses labels the judge's verdict on a trace; the
label counts toward that check's calibration (kappa, the calibration page, the gate), as a
run's label does; who may not label is refused; the rule's own checks are not offered."""

from decimal import Decimal

import pytest

from evaluations.models import ModelPrice
from evaluations.reads.calibration import agreement_for, calibration_of
from governance.models import AuditEntry
from production.actions.create_online_rule import CreateOnlineRule
from production.models import TraceLabel, TraceScore
from production.online import scoring
from tests.support import factories, online
from tests.support.judge_fixtures import JUDGE_MODEL
from tests.support.llm_server import schema_responder

POLITE = {"label": "polite", "kind": "safety", "params": {}, "threshold": 0.5}


@pytest.fixture
def scored(agent, builder, judge_settings, llm_server):
    """Three traces scored by the rule, which reuses the dataset version's model check."""
    library = factories.dataset_version(
        factories.dataset("tone"), cases=[("c", "Hi?", {})], checks=[POLITE]
    )
    llm_server.responder = schema_responder
    ModelPrice.objects.create(
        model=JUDGE_MODEL, usd_per_million_input=Decimal("1"), usd_per_million_output=Decimal("1")
    )
    CreateOnlineRule(
        acting_user=builder,
        agent=agent,
        library_version=library.pk,
        checks=[{"label": "own", "kind": "output_type", "params": {"type": "text"}}],
        judge_model=JUDGE_MODEL,
    ).execute()
    version = agent.versions.get(number=1)
    rows = [
        online.trace(agent, version, {"input": f"Q{n}", "output": f"Sure, answer {n}."})
        for n in range(3)
    ]
    scoring.score_traces([row.pk for row in rows])
    assert set(TraceScore.objects.values_list("state", flat=True)) == {"scored"}
    return library, library.checks.get(label="polite")


def test_an_editor_labels_a_trace_and_the_check_is_calibrated_with_it(client, scored):
    library, check = scored
    editor = factories.user("ed", role="Editor")
    client.force_login(editor)
    page = client.get("/production/labels/").content.decode()
    assert page.count('name="trace_score"') == 3  # one per trace, the own check not offered
    assert ">own<" not in page
    score = TraceScore.objects.order_by("pk").first()
    response = client.post(
        "/production/labels/",
        {"trace_score": score.pk, "check": check.pk, "verdict": "fail", "note": "curt"},
    )
    assert response.status_code == 302
    label = TraceLabel.objects.get()
    assert label.passed is False and label.calibration_key == check.calibration_key
    assert AuditEntry.objects.filter(action="production.trace_result.label").exists()
    # Counted: the human failed it, whatever the judge said.
    judged = next(r for r in score.results if r["label"] == "polite")
    agreement = agreement_for([check.pk])[check.pk]
    if judged["status"] == "passed":
        assert agreement.n == 1 and agreement.judge_pass_human_fail == 1
    else:
        assert agreement.n == 1 and agreement.both_fail == 1
    assert calibration_of(check).agreement.n == 1
    calibration = client.get(f"/checks/{check.pk}/calibration/").content.decode()
    assert f"/production/traces/{score.trace_id}/" in calibration and "curt" in calibration
    # Labelled once: no longer offered.
    assert client.get("/production/labels/").content.decode().count('name="trace_score"') == 2


def test_who_may_not_label_is_refused(client, scored, builder):
    _, check = scored
    score = TraceScore.objects.first()
    client.force_login(builder)  # Builder of the agent, no role on the dataset
    assert 'id="nothing"' in client.get("/production/labels/").content.decode()
    client.post(
        "/production/labels/", {"trace_score": score.pk, "check": check.pk, "verdict": "pass"}
    )
    assert not TraceLabel.objects.exists()


def test_a_label_needs_one_verdict(client, scored):
    _, check = scored
    client.force_login(factories.user("ed", role="Editor"))
    score = TraceScore.objects.first()
    response = client.post(
        "/production/labels/", {"trace_score": score.pk, "check": check.pk}, follow=True
    )
    assert "Give pass/fail or a score" in response.content.decode()
    assert not TraceLabel.objects.exists()
