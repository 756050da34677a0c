"""The case file formats (evaluations/cases_io): each reader turns a file into case rows and
names the line (or CSV row) and field of every row it cannot read, detection picks the format
from the name and content, and the writers' files read back as the same cases."""

import json

import pytest

from evaluations.cases_io import (
    FileInvalid,
    UnknownFormat,
    derived_key,
    detect_format,
    read_cases,
    write_cases,
)


def read(text, fmt=None, filename=None):
    """(format, {key: fields} of the rows read without error, the errors as text)."""
    fmt, rows, errors = read_cases(text, fmt, filename)
    return fmt, {row.key: row.fields for row in rows if not row.faulty}, [str(e) for e in errors]


def jsonl(*objects):
    return "".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objects)


# --- Sherlock JSONL ----------------------------------------------------------------------------


def test_sherlock_jsonl_reads_key_and_the_fields_a_line_gives():
    text = jsonl(
        {"key": "a", "input": "hi", "expected": {"output": "yo"}, "tags": ["t"]},
        "",
        {"id": "b", "input": {"q": 1}},
    )
    fmt, cases, errors = read(text, "jsonl")
    assert errors == []
    assert cases == {
        "a": {"input": "hi", "expected": {"output": "yo"}, "tags": ["t"]},
        "b": {"input": {"q": 1}},
    }


def test_sherlock_jsonl_names_the_line_of_broken_json_and_hands_on_the_rest_for_the_rules():
    text = jsonl({"key": "a"}, "{not json", {"key": "c", "expectd": {}}, {"input": "no key"}, "[1]")
    _, cases, errors = read(text, "jsonl")
    # An unknown field and a missing key are the case's rules (content_errors, key_errors),
    # which the import applies with every other error of the line (test_import_cases).
    assert cases == {"a": {}, "c": {"expectd": {}}, None: {"input": "no key"}}
    assert errors[0].startswith("line 2: not JSON")
    assert errors[1:] == ["line 5: must be a JSON object"]


# --- CSV ---------------------------------------------------------------------------------------


CSV = (
    "key,input,expected_output,contexts,expected_tools,tags,overrides\n"
    'refund,"Refund $20?",Approved,"Refunds under $50 are automatic.\nOver $50: a person.",'
    'kb.search,"refunds, money","{""Tools"": {""threshold"": 0.5}}"\n'
    "hello,hi,,,,,\n"
)


def test_csv_reads_plain_text_one_context_per_line_names_and_tags_by_comma_and_json_cells():
    fmt, cases, errors = read(CSV, filename="cases.csv")
    assert (fmt, errors) == ("csv", [])
    assert cases["refund"] == {
        "input": "Refund $20?",
        "expected": {"output": "Approved"},
        "contexts": ["Refunds under $50 are automatic.", "Over $50: a person."],
        "expected_tools": [{"name": "kb.search"}],
        "tags": ["refunds", "money"],
        "overrides": {"Tools": {"threshold": 0.5}},
    }
    assert cases["hello"] == {
        "input": "hi",
        "expected": {},
        "contexts": [],
        "expected_tools": [],
        "tags": [],
        "overrides": {},
    }


def test_csv_takes_json_lists_and_a_json_input():
    text = (
        "key,input_json,contexts,expected_tools\n"
        'a,"{""q"": 1}","[""one\\nline two""]","[{""name"": ""t"", ""arguments"": {""x"": 1}}]"\n'
    )
    _, cases, errors = read(text, "csv")
    assert errors == []
    assert cases["a"] == {
        "input": {"q": 1},
        "contexts": ["one\nline two"],
        "expected_tools": [{"name": "t", "arguments": {"x": 1}}],
    }


def test_csv_names_the_row_and_column_of_bad_cells():
    text = 'key,input,expected,overrides\na,x,{oops,\nb,y,"[1]",\nc,z,,\nd,w\ne,v,,"{""T"": 1"\n'
    _, cases, errors = read(text, "csv")
    assert list(cases) == ["c"]
    assert errors[0].startswith("row 2: expected: not JSON")
    assert errors[1] == "row 3: expected: must be a JSON dict"
    assert errors[2] == "row 5: 2 cells for 4 columns"
    assert errors[3].startswith("row 6: overrides: not JSON")


def test_csv_names_every_bad_cell_of_a_row_and_hands_on_what_it_could_read():
    text = 'key,input,expected,tags,overrides\na,x,{oops,"[1, ","[2]"\n'
    _, rows, errors = read_cases(text, "csv")
    assert [e.field for e in errors] == ["expected", "tags", "overrides"]
    assert all(str(e).startswith("row 2: ") for e in errors)
    assert rows[0].faulty and rows[0].fields == {"input": "x"}


def test_csv_refuses_an_unknown_column_or_a_header_without_key():
    assert read("key,inptu\na,x\n", "csv")[2] == ["row 1: unknown column 'inptu'"]
    assert read("input\nx\n", "csv")[2] == ["row 1: a key column is needed"]


def test_csv_with_semicolons_as_some_spreadsheets_write_it_reads_the_same():
    _, cases, errors = read("key;input;tags\na;Hello, world;x, y\n", "csv")
    assert errors == [] and cases == {"a": {"input": "Hello, world", "tags": ["x", "y"]}}


def test_a_cell_over_the_csv_modules_own_limit_is_read_for_the_case_limit_to_judge():
    huge = "x" * 200_000  # over the csv module's default 131,072, under the case's 256 KiB
    _, cases, errors = read(f"key,input\na,x\nb,{huge}\n", "csv")
    assert errors == [] and cases["b"] == {"input": huge}


# --- OpenAI evals, Langfuse, promptfoo ---------------------------------------------------------


def test_openai_evals_turn_chat_messages_and_ideal_into_input_and_expected_output():
    system = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital?"}]
    text = jsonl(
        {"input": [{"role": "user", "content": "2+2?"}], "ideal": "4"},
        {"input": system, "ideal": ["Paris", "paris"], "metadata": {"key": "capital"}},
    )
    fmt, cases, errors = read(text, filename="samples.jsonl")
    assert (fmt, errors) == ("openai-evals", [])
    key = derived_key("oe", [{"role": "user", "content": "2+2?"}])
    assert cases[key] == {"input": "2+2?", "expected": {"output": "4"}}
    assert cases["capital"] == {
        "input": {"messages": system},
        "expected": {"output": "Paris", "ideal": ["Paris", "paris"]},
    }


def test_openai_evals_name_the_line_of_a_bad_message_a_missing_input_and_an_unknown_field():
    text = jsonl(
        {"input": [{"role": "user"}], "ideal": "x"},
        {"ideal": "x"},
        {"input": "q", "ideal": 4},
        {"input": "q", "choices": []},
    )
    _, cases, errors = read(text, "openai-evals")
    assert cases == {}
    assert errors == [
        "line 1: input[0]: a chat message needs role and content",
        "line 2: input: needed",
        "line 3: ideal: must be text or a list of texts",
        "line 4: unknown field 'choices'",
    ]


def test_a_derived_key_is_stable_and_a_slug():
    key = derived_key("oe", {"b": 1, "a": [2]})
    assert key == derived_key("oe", {"a": [2], "b": 1})
    assert key.startswith("oe-") and len(key) == 15


def test_langfuse_items_read_id_input_expected_output_and_metadata():
    items = [
        {
            "id": "refund-1",
            "input": {"question": "Refund?"},
            "expectedOutput": "Approved.",
            "metadata": {"tags": ["refunds"], "contexts": ["Policy."], "owner": "ops"},
            "status": "ACTIVE",
            "datasetId": "ds1",
        },
        {"input": "no id", "expectedOutput": {"output": "x", "table": {"columns": []}}},
    ]
    fmt, cases, errors = read(json.dumps(items, indent=2), filename="items.json")
    assert (fmt, errors) == ("langfuse", [])
    assert cases["refund-1"] == {
        "input": {"question": "Refund?"},
        "expected": {"output": "Approved."},
        "tags": ["refunds"],
        "contexts": ["Policy."],
    }
    assert cases[derived_key("lf", "no id")]["expected"]["table"] == {"columns": []}
    # The API's list answer and JSON Lines read the same.
    assert read(json.dumps({"data": items, "meta": {}}), "langfuse")[1] == cases
    assert read(jsonl(*items), "langfuse")[1] == cases


def test_langfuse_names_the_item_at_fault():
    items = [{"id": "a", "input": "x"}, {"id": "b"}, {"id": "c", "input": "y", "expectedOutput": 3}]
    _, cases, errors = read(json.dumps(items), "langfuse")
    assert list(cases) == ["a"]
    assert errors == [
        "item 2: input: needed",
        "item 3: expectedOutput: must be text or an object",
    ]
    assert read("[{oops", "langfuse")[2][0].startswith("line 1: not JSON")


def test_promptfoo_tests_read_vars_and_expected_values_and_keep_other_assertions():
    text = (
        "question,__expected,__expected2,__metadata:key,__description\n"
        "Capital of France?,Paris,,capital,geo\n"
        'Refund $20?,"contains: approved","llm-rubric: is polite",,\n'
    )
    fmt, cases, errors = read(text, filename="tests.csv")
    assert (fmt, errors) == ("promptfoo", [])
    assert cases["capital"] == {"input": "Capital of France?", "expected": {"output": "Paris"}}
    refund = cases[derived_key("pf", "Refund $20?")]
    assert refund["expected"] == {"assertions": ["contains: approved", "llm-rubric: is polite"]}


def test_promptfoo_with_several_vars_gives_an_object_input_and_equals_is_the_output():
    text = "topic,tone,__expected\nrefunds,kind,equals: Sure thing\n"
    _, cases, errors = read(text, "promptfoo")
    assert errors == []
    [fields] = cases.values()
    assert fields == {
        "input": {"topic": "refunds", "tone": "kind"},
        "expected": {"output": "Sure thing"},
    }


def test_promptfoo_names_the_row_with_missing_cells():
    _, _, errors = read("q,__expected\na,b\nc\n", "promptfoo")
    assert errors == ["row 3: 1 cells for 2 columns"]


# --- detection ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,filename,expected",
    [
        ("key,input\na,x\n", "cases.csv", "csv"),
        ("key,input\na,x\n", None, "csv"),
        ("q,__expected\na,b\n", "tests.csv", "promptfoo"),
        ('{"key": "a", "input": "x"}\n', "cases.jsonl", "jsonl"),
        ('{"id": "a", "contexts": []}\n', None, "jsonl"),
        (
            '{"input": [{"role": "user", "content": "x"}], "ideal": "y"}\n',
            "s.jsonl",
            "openai-evals",
        ),
        ('{"id": "1", "input": "x", "expectedOutput": "y"}\n', "items.jsonl", "langfuse"),
        ('[{"id": "1", "input": "x"}]', "items.json", "langfuse"),
        ('{"data": [], "meta": {}}', None, "langfuse"),
    ],
)
def test_the_format_is_detected_from_the_name_and_first_record(text, filename, expected):
    assert detect_format(text, filename) == expected


def test_an_undetectable_file_asks_for_the_format():
    with pytest.raises(UnknownFormat, match="name it"):
        detect_format('{"input": "x"}\n', "x.jsonl")
    with pytest.raises(UnknownFormat, match="unknown format"):
        read_cases("x", "yaml")
    with pytest.raises(FileInvalid, match="line 1: not UTF-8"):
        read_cases(b"\xff\xfe", "csv")


# --- writers -----------------------------------------------------------------------------------

AWKWARD = [
    {
        "key": "awkward",
        "input": {"messages": [{"role": "user", "content": "hi"}]},
        "expected": {"output": "", "table": {"columns": ["a"]}},
        "contexts": ["two\nlines", "", " padded "],
        "expected_tools": [{"name": "a,b"}, {"name": "t", "arguments": {"x": 1}}],
        "outcome_check": {"kind": "python", "callable": "agents.demo.x"},
        "tags": ["with, comma", "[bracket"],
        "overrides": {"Tools": {"disabled": True}},
    },
    {
        "key": "plain",
        "input": "Refund $20?",
        "expected": {"output": "Approved"},
        "contexts": ["one", "two"],
        "expected_tools": [{"name": "kb.search"}],
        "outcome_check": {},
        "tags": ["a", "b"],
        "overrides": {},
    },
    {
        "key": "empty",
        "input": "",
        "expected": {},
        "contexts": [],
        "expected_tools": [],
        "outcome_check": {},
        "tags": [],
        "overrides": {},
    },
]


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_what_a_writer_writes_reads_back_as_the_same_cases(fmt):
    text = write_cases(AWKWARD, fmt)
    assert detect_format(text, f"export.{fmt}") == fmt
    _, cases, errors = read(text, fmt)
    assert errors == []
    assert cases == {case["key"]: {k: v for k, v in case.items() if k != "key"} for case in AWKWARD}


def test_the_csv_writer_uses_plain_cells_where_they_read_back_the_same():
    text = write_cases(AWKWARD[1:2], "csv")
    assert text.splitlines()[1:] == ['plain,Refund $20?,,Approved,,"one', 'two",kb.search,"a, b",,']


def test_the_examples_of_docs_cases_md_read_as_their_format():
    """Every example under a format's heading in docs/cases.md is read without an error."""
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "cases.md").read_text()
    sections = re.findall(r"### .*?\(`([a-z-]+)`\)\n(.*?)(?=\n### |\n## )", doc, flags=re.S)
    assert {name for name, _ in sections} == {
        "jsonl",
        "csv",
        "openai-evals",
        "langfuse",
        "promptfoo",
    }
    for name, body in sections:
        [example] = re.findall(r"```(?:json|csv)\n(.*?)```", body, flags=re.S)
        fmt, cases, errors = read(example)
        assert (fmt, errors) == (name, []) and cases, name
