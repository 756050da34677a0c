"""Check evidence read by shape on the trial page (evaluations.reads.evidence_display)."""

from evaluations.reads.evidence_display import evidence_blocks, highlight_quotes


def kinds(blocks):
    return {block["label"]: block["kind"] for block in blocks}


def test_compared_lists_are_shown_side_by_side():
    blocks = evidence_blocks({"expected": ["kb.search"], "called": ["wrong.tool({})"]})
    assert blocks == [
        {
            "kind": "pair",
            "label": "expected vs called",
            "left": "expected",
            "right": "called",
            "left_items": ["kb.search"],
            "right_items": ["wrong.tool({})"],
        }
    ]


def test_claims_become_a_table_with_verdict_badges():
    (block,) = evidence_blocks({"claims": [{"claim": "A", "verdict": "contradicted"}]})
    assert block["kind"] == "table" and block["columns"] == ["claim", "verdict"]
    assert block["rows"][0][1] == {"text": "contradicted", "css": "fail"}


def test_row_differences_take_the_evidences_columns():
    blocks = evidence_blocks(
        {"columns": ["city", "n"], "missing_rows": [["Paris", 3]], "matched_rows": 0}
    )
    table = next(b for b in blocks if b["label"] == "missing_rows")
    assert table["columns"] == ["city", "n"] and table["rows"][0][0]["text"] == "Paris"
    facts = blocks[0]
    assert (
        facts["kind"] == "facts"
        and {"label": "matched_rows", "text": "0", "css": None} in (facts["facts"])
    )


def test_raw_answers_and_deep_values_fall_back_to_json():
    assert kinds(evidence_blocks({"raw": "{not json", "observed": {"a": {"b": 1}}})) == {
        "raw": "json",
        "observed": "json",
    }


def test_a_quote_is_highlighted_up_to_whitespace_and_around_an_elision():
    html, missing = highlight_quotes(
        "Shipping takes\n3 days. <b>Returns</b> are free.",
        ["Shipping takes 3 days", '"<b>Returns</b> ... free"', "not there"],
    )
    assert "<mark>Shipping takes\n3 days</mark>" in html
    assert "<mark>&lt;b&gt;Returns&lt;/b&gt;</mark> are <mark>free</mark>" in html
    assert missing == ["not there"]
