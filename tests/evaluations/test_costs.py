"""The price and cost computations of evaluations.costs on their own: judge calls priced from
`ModelPrice` ("price missing" without one, nothing for a cache hit), the ledger lines of agent
and judge calls, and an agent call's cost and billing coverage. Runs that use them end to end:
test_run_cost.py."""

from decimal import Decimal

from django.utils import timezone

from evaluations.costs.ledger import agent_cost_line, judge_cost_lines
from evaluations.costs.prices import agent_cost, load_prices, price_judge_calls
from evaluations.costs.texts import describe_estimate, format_usd
from evaluations.models import CostEntry, JudgeCall, ModelPrice


def call(model, prompt=1000, completion=500, cached=False):
    return JudgeCall(model=model, prompt_tokens=prompt, completion_tokens=completion, cached=cached)


def test_judge_calls_are_priced_with_one_lookup_and_a_missing_price_is_not_zero(
    db, django_assert_num_queries
):
    ModelPrice.objects.create(
        model="judge", usd_per_million_input=Decimal(1), usd_per_million_output=Decimal(2)
    )
    priced, unpriced, hit = call("judge"), call("unknown"), call("judge", cached=True)
    with django_assert_num_queries(1):
        total = price_judge_calls([priced, unpriced, hit])
    assert priced.usd == Decimal("0.002")
    assert unpriced.usd is None and unpriced.price_missing
    assert hit.usd is None and not hit.price_missing
    assert total == Decimal("0.002")


def test_judge_calls_priced_from_loaded_prices_need_no_query(db, django_assert_num_queries):
    ModelPrice.objects.create(
        model="judge", usd_per_million_input=Decimal(1), usd_per_million_output=Decimal(1)
    )
    prices = load_prices()
    calls = [call("judge"), call("judge", prompt=0, completion=1_000_000)]
    with django_assert_num_queries(0):
        assert price_judge_calls(calls, prices) == Decimal("1.0015")
    assert price_judge_calls([]) == 0


def test_every_real_judge_call_gets_a_scoring_line_and_a_cache_hit_none():
    paid, hit = call("judge"), call("judge", cached=True)
    paid.usd = Decimal("0.5")
    day = timezone.localdate()
    lines = judge_cost_lines([paid, hit], day=day, agent_id=1, run_id=2, trial_id=3)
    assert len(lines) == 1
    line = lines[0]
    assert (line.kind, line.model, line.usd, line.judge_call) == (
        "scoring",
        "judge",
        paid.usd,
        paid,
    )
    assert (line.prompt_tokens, line.completion_tokens) == (1000, 500)
    assert (line.day, line.agent_id, line.run_id, line.trial_id) == (day, 1, 2, 3)


def test_an_agent_call_has_an_agent_line():
    day = timezone.localdate()
    line = agent_cost_line(
        model="m",
        prompt_tokens=3,
        completion_tokens=4,
        usd=None,
        day=day,
        agent_id=1,
        run_id=2,
        trial_id=3,
    )
    assert isinstance(line, CostEntry) and line.pk is None
    assert (line.kind, line.model, line.usd, line.prompt_tokens) == ("agent", "m", None, 3)


def test_agent_cost_is_billed_estimated_or_missing():
    price = ModelPrice(usd_per_million_input=Decimal(1), usd_per_million_output=Decimal(2))
    usage = {"prompt_tokens": 1000, "completion_tokens": 500}
    assert agent_cost({"cost_usd": 0.02}, "m", {}) == (Decimal("0.02"), "billed")
    assert agent_cost({"usage": usage}, "m", {"m": price}) == (Decimal("0.002"), "estimated")
    assert agent_cost({"usage": usage}, "m", {}) == (None, "missing")
    assert agent_cost({}, "m", {"m": price}) == (None, "missing")
    assert agent_cost(None, "m", {"m": price}) == (None, "missing")


def test_the_estimate_reads_as_calls_and_what_is_missing_a_price():
    assert describe_estimate({}) == "-"
    assert describe_estimate({"calls": 3, "judge_calls": 1, "usd": 0.25}) == (
        "3 calls (1 judge), $0.25"
    )
    # A missing price reads "price missing (N calls)", never "$0.0000 known".
    missing = {
        "calls": 2,
        "agent_calls": 2,
        "agent_usd": None,
        "judge_calls": 0,
        "usd": None,
        "price_missing": ["agent x v1"],
        "usd_known": 0,
    }
    assert describe_estimate(missing) == (
        "2 calls (0 judge), price missing (2 calls) for agent x v1"
    )
    judged = {
        "calls": 5,
        "agent_calls": 2,
        "agent_usd": 0.02,
        "judge_calls": 3,
        "usd": None,
        "usd_known": 0.02,
        "price_missing": ["judge-model"],
        "checks": {"Faithful": {"calls": 3, "usd": None}, "Relevant": {"calls": 0, "usd": 0}},
    }
    assert describe_estimate(judged) == (
        "5 calls (3 judge), $0.02 + price missing (3 calls) for judge-model"
    )


def test_money_reads_price_missing_with_the_calls_never_zero_dollars():
    assert format_usd(Decimal("0.01234")) == "$0.0123"
    assert format_usd(Decimal(0)) == "$0.00"  # known and free (a cache hit)
    assert format_usd(Decimal(0), 4) == "price missing (4 calls)"
    assert format_usd(Decimal(0), 1) == "price missing (1 call)"
    assert format_usd(Decimal("0.5"), 2) == "$0.50 + price missing (2 calls)"
    assert format_usd(None) == "price missing"
    assert format_usd(None, 3) == "price missing (3 calls)"


def test_templates_show_money_through_the_usd_filter():
    from django.template import Context, Template

    template = Template("{% load money %}{{ amount|usd:missing }}")
    assert template.render(Context({"amount": Decimal(0), "missing": 2})) == (
        "price missing (2 calls)"
    )
    assert template.render(Context({"amount": Decimal("1.5"), "missing": 0})) == "$1.50"
