"""The custom check: label, criterion, anchored scale and verified quotes (evaluators.md §6)."""

import pytest

from evaluations.checks import ParamsError, evaluate, validate_params
from evaluations.checks.custom import quote_found

from .judges import Answer, ScriptedJudge

pytestmark = pytest.mark.usefixtures("both_paths")  # evaluate and aevaluate (conftest)

# The documented example of an anchored criterion (French edition).
PARAMS = {
    "label": "Terminologie maison",
    "criterion": "Emploie « adhérent » et non « utilisateur », « formule » et non « pack ». "
    "Ne promet jamais de délai précis. Se termine par une prochaine étape.",
    "anchors": "0 = emploie « utilisateur » ou « pack », ou promet un délai. 1 = emploie "
    "« adhérent » et « formule » partout, ne promet aucun délai, et se termine par une "
    "prochaine étape.",
}
CASE = {"input": "Puis-je changer de formule ?"}
GOOD = {"output": "Oui, chaque adhérent peut changer de formule.\nEnvoyez-nous le formulaire."}
BAD = {"output": "Oui, chaque utilisateur peut changer de pack sous 24 heures."}


def verdict_of(score, *quotes, reason="ok"):
    return {"quotes": list(quotes), "reason": reason, "score": score}


def judged(params, transcript, *answers):
    judge = ScriptedJudge({"custom.criterion": list(answers)})
    return evaluate("custom", params, CASE, transcript, judge), judge


def test_custom_passes_an_output_that_meets_the_anchored_criterion():
    verdict, judge = judged(
        PARAMS,
        GOOD,
        verdict_of(1, "chaque adhérent peut changer de formule", "Envoyez-nous le formulaire."),
    )
    assert (verdict.outcome, verdict.score) == ("scored", 1.0)
    assert verdict.evidence["label"] == "Terminologie maison"
    assert PARAMS["anchors"] in judge.prompts[0]


def test_custom_fails_an_output_that_breaks_the_criterion():
    verdict, _ = judged(PARAMS, BAD, verdict_of(0, "utilisateur", "sous 24 heures"))
    assert (verdict.outcome, verdict.score) == ("scored", 0.0)


def test_custom_skips_without_output():
    verdict, judge = judged(PARAMS, {"output": None})
    assert verdict.outcome == "skipped" and judge.asked == []


def test_custom_skips_without_a_judge():
    verdict = evaluate("custom", PARAMS, CASE, GOOD)
    assert (verdict.outcome, verdict.reason) == ("skipped", "no judge configured")


@pytest.mark.parametrize(
    ("scale", "grade", "score"),
    [
        ({"min": 0, "max": 1}, 1, 1.0),
        ({"min": 1, "max": 5}, 4, 0.75),
        ({"min": 0, "max": 10}, 7, 0.7),
    ],
)
def test_custom_normalizes_the_grade_on_its_scale(scale, grade, score):
    params = {**PARAMS, "scale": scale}
    verdict, judge = judged(params, GOOD, verdict_of(grade, "adhérent"))
    assert verdict.score == pytest.approx(score)
    assert f"integer from {scale['min']} to {scale['max']}" in judge.prompts[0]


def test_custom_is_an_error_when_the_grade_is_outside_the_scale():
    params = {**PARAMS, "scale": {"min": 1, "max": 5}}
    verdict, _ = judged(params, GOOD, verdict_of(6, "adhérent"))
    assert (verdict.outcome, verdict.score) == ("error", None)
    assert "outside 1-5" in verdict.reason


def test_custom_takes_its_scale_from_anchor_points():
    params = validate_params(
        "custom", {"label": "L", "criterion": "C", "anchors": {"5": "perfect", "1": "useless"}}
    )
    verdict, judge = judged(params, GOOD, verdict_of(3, "adhérent"))
    assert verdict.score == 0.5
    assert "1 = useless\n5 = perfect" in judge.prompts[0]


def test_custom_is_an_error_when_a_quote_is_not_in_the_output():
    verdict, _ = judged(PARAMS, GOOD, verdict_of(1, "adhérent", "chaque membre"))
    assert (verdict.outcome, verdict.score) == ("error", None)
    assert verdict.reason == (
        "unverifiable evidence: 1 of 2 quotes are not in the output, e.g. 'chaque membre'"
    )
    assert verdict.evidence["missing_quotes"] == ["chaque membre"]


def test_custom_is_an_error_when_the_judge_quotes_nothing():
    verdict, _ = judged(PARAMS, GOOD, verdict_of(1))
    assert verdict.outcome == "error"
    assert verdict.reason.startswith("unverifiable evidence")


def test_custom_verifies_quotes_of_a_structured_output_against_its_json_text():
    verdict, _ = judged(
        PARAMS,
        {"output": {"reply": "Bonjour adhérent"}},
        verdict_of(1, '"reply": "Bonjour adhérent"'),
    )
    assert verdict.outcome == "scored"


def test_custom_is_an_error_when_the_judge_answer_failed():
    verdict, _ = judged(PARAMS, GOOD, Answer(False, None, "malformed JSON twice", "{oops"))
    assert (verdict.outcome, verdict.reason, verdict.evidence) == (
        "error",
        "malformed JSON twice",
        {"raw": "{oops"},
    )


@pytest.mark.parametrize(
    ("quote", "found"),
    [
        ("chaque adhérent peut", True),
        ("chaque  adhérent\npeut", True),  # whitespace runs are one space
        ("formule. Envoyez-nous", True),  # the output's line break is whitespace too
        ("Chaque adhérent", False),  # case-sensitive
        ("« chaque adhérent »", True),  # the judge's own quote marks
        ("Oui, chaque ... le formulaire", True),  # an elision: fragments in order
        ("le formulaire … Oui", False),  # fragments out of order
        ("...", False),
        ("chaque membre", False),
    ],
)
def test_quotes_are_found_verbatim_up_to_whitespace(quote, found):
    assert quote_found(quote, GOOD["output"]) is found


def test_custom_requires_a_criterion():
    with pytest.raises(ParamsError) as error:
        validate_params("custom", {"label": "Tone"})
    assert error.value.field == "criterion"


def test_custom_rejects_anchors_outside_the_scale():
    with pytest.raises(ParamsError) as error:
        validate_params(
            "custom",
            {**PARAMS, "anchors": {"0": "bad", "7": "good"}, "scale": {"min": 0, "max": 5}},
        )
    assert error.value.field == "anchors.7"


def test_custom_rejects_a_scale_without_two_ends():
    with pytest.raises(ParamsError) as error:
        validate_params("custom", {**PARAMS, "scale": {"min": 3, "max": 3}})
    assert error.value.field == "scale.max"


def test_custom_rejects_anchor_points_beyond_ten():
    with pytest.raises(ParamsError) as error:
        validate_params("custom", {**PARAMS, "anchors": {"0": "bad", "11": "good"}})
    assert error.value.field == "anchors"
