"""The verifier language's states are the Trial columns' states: a verdict a verifier gives is
stored as it is (agents.verifiers.spec, evaluations.choices)."""

from agents.verifiers.spec import EFFECT, FAILED, NO_VERDICT, OUTCOME, VERIFIED
from evaluations.choices import EffectState, OutcomeVerdict


def test_a_verifiers_states_are_the_outcome_and_effect_states_a_trial_stores():
    assert {VERIFIED, FAILED, NO_VERDICT[OUTCOME]} == set(OutcomeVerdict.values)
    assert {VERIFIED, FAILED, NO_VERDICT[EFFECT]} == set(EffectState.values)
