"""One strict reader for the JSON Sherlock is sent (`sherlock.core.json_text`): an API body, a
tracer's spans in OTLP/JSON, a case file and a trial file refuse the same things (a member named
twice, NaN, a number out of range, nesting past the limit) and say where, each in its own words
for its reader (a 400 naming line and column, a case file's line, a trial file's line)."""

from decimal import Decimal

import pytest

from evaluations.cases_io import read_cases
from evaluations.contract import ContractInputError, load_document
from sherlock.core import json_text
from sherlock.core.api.parsers import loads_bounded
from sherlock.core.limits import JSON_MAX_DEPTH, json_depth

REFUSED = [
    ('{"a": 1, "a": 2}', "duplicate member 'a'"),
    ('{"a": NaN}', "NaN is not JSON"),
    ('{"a": 1e400}', "number out of range"),
    ('{"a": "x\\u0000y"}', "NUL"),
    ('{"a": "\\ud800"}', "lone surrogate"),
    ("[" * (JSON_MAX_DEPTH + 1) + "]" * (JSON_MAX_DEPTH + 1), "nested deeper"),
]


@pytest.mark.parametrize(("text", "why"), REFUSED)
def test_the_reader_refuses_with_the_place(text, why):
    with pytest.raises(json_text.JSONRefused, match=why) as refused:
        json_text.loads(text)
    assert refused.value.offset is not None


def test_where_is_line_and_column_from_one():
    text = '{\n  "a": 1,\n  "a": 2\n}'
    with pytest.raises(json_text.JSONRefused) as refused:
        json_text.loads(text)
    assert json_text.line_and_column(text, refused.value.offset) == (3, 6)
    assert refused.value.field == "a"


def test_recorded_text_keeps_its_nul_as_a_replacement_character_and_depth_is_its_callers():
    assert json_text.loads('{"a": "x\\u0000y"}', recorded=True) == {"a": "x\ufffdy"}
    deep = "[" * 40 + "]" * 40
    with pytest.raises(json_text.JSONTooDeep):
        json_text.loads(deep)
    assert json_depth(json_text.loads(deep, max_depth=40)) == 40


def test_decimal_numbers_are_read_exactly_and_still_refuse_nan():
    assert json_text.loads('{"cost": 0.1}', floats=Decimal) == {"cost": Decimal("0.1")}
    with pytest.raises(json_text.JSONRefused, match="NaN"):
        json_text.loads('{"cost": NaN}', floats=Decimal)


@pytest.mark.parametrize(("text", "why"), REFUSED)
def test_an_api_body_is_refused_naming_line_and_column(text, why):
    from rest_framework.exceptions import ParseError

    with pytest.raises(ParseError) as refused:
        loads_bounded(text.encode())
    detail = str(refused.value.detail)
    assert why in detail or "deeper" in why
    if "deeper" not in why:
        assert "(line 1, column" in detail


def test_a_trial_file_refuses_a_member_named_twice_with_its_line():
    text = '{"trials": [\n  {"trial_id": "a", "trial_id": "b"}\n]}'
    with pytest.raises(ContractInputError, match=r"line 2, column \d+: duplicate member"):
        load_document(text)


def test_a_json_lines_trial_file_names_the_line_of_its_refusal():
    text = '{"trial_id": "a", "variant": "v"}\n{"trial_id": "b", "cost_usd": NaN}\n'
    with pytest.raises(ContractInputError, match="line 2, column 31: NaN is not JSON"):
        load_document(text)


def test_a_trial_files_costs_are_exact():
    document = load_document('{"trials": [{"trial_id": "a", "cost_usd": 0.1}]}')
    assert document.trials[0]["cost_usd"] == Decimal("0.1")


def test_a_case_file_refuses_a_member_named_twice_with_its_line():
    text = '{"key": "a", "input": "x"}\n{"key": "b", "input": "x", "input": "y"}\n'
    _, _, errors = read_cases(text, "jsonl")
    assert [(e.line, "duplicate member 'input'" in e.message) for e in errors] == [(2, True)]


def test_an_otlp_json_export_with_a_member_named_twice_is_a_bad_body():
    from production.traces.otlp import JSON, OTLPError, decode_request

    with pytest.raises(OTLPError, match="duplicate member") as refused:
        decode_request(b'{"resourceSpans": [], "resourceSpans": []}', JSON)
    assert refused.value.status == 400
