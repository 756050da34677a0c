"""A run's JUnit XML: the one writer that `GET /api/v1/runs/{id}/junit/`, `manage.py export_run
--format junit`, `manage.py evaluate --junit` and the `sherlock` client all use (docs/api.md,
"JUnit report").

One `<testsuite>` for the run, one `<testcase>` per case of its dataset version and one more,
`verdict`, that fails unless the verdict passed, so that a CI reading only the test report never
shows a failed, incomplete or undecided run green (its `type` is the outcome: `failed`,
`incomplete`, `insufficient`, the last read "insufficient evidence" in its message). A case
reads as its stored state says (`CaseResult.status`, docs/checks.md "Case states"):

- passed: an empty `<testcase>`;
- failed or flaky: a `<failure>` naming the blocking checks that failed and in how many
  repetitions (`type` is `failed` or `flaky`);
- unscored: an `<error>` with its reason (`type` is the reason, words joined by `_`:
  `agent_error`, `judge_unavailable`, `check_error`, `every_blocking_check_skipped`), never a
  pass and never a skip: nothing decided the case, and a CI that hides skips would hide it.

The repetitions' statuses go in each case's `<system-out>`. Every text and attribute is made
safe for XML 1.0 (`xml_safe`): characters XML forbids (control characters such as an ANSI
escape, NUL, lone surrogates) are written as `\\xNN` or `\\uNNNN`, so the file is always
well-formed, and checked against the Jenkins/Surefire JUnit schema in the tests.
"""

from __future__ import annotations

import re
from xml.etree import ElementTree

from evaluations.choices import CaseStatus
from evaluations.models import CaseResult, Trial

# What XML 1.0 forbids in a document: C0 controls but tab, newline and carriage return,
# surrogates (a lone half of a pair), U+FFFE and U+FFFF.
_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
MESSAGE_CHARS = 1000  # a failure's `message` attribute, for a CI's one-line summary


def xml_safe(value: object, limit: int | None = None) -> str:
    """``value`` as text XML 1.0 may hold: each forbidden character written as its escape
    (``\\x1b``, ``\\ud800``), cut to ``limit`` characters with an ellipsis."""
    text = _FORBIDDEN.sub(_escape, str(value))
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _element(parent, tag: str, text: str | None = None, **attributes) -> ElementTree.Element:
    node = ElementTree.SubElement(
        parent, tag, {name: xml_safe(value) for name, value in attributes.items()}
    )
    if text:
        node.text = xml_safe(text)
    return node


def run_junit(run, verdict) -> str:
    """The JUnit XML of ``run`` (its case results and trials) under ``verdict``
    (``evaluations.verdict.run_verdict``). Three queries whatever the number of cases."""

    results = list(CaseResult.objects.filter(run=run).select_related("case").order_by("case__key"))
    repetitions: dict[int, list[tuple[int, str, str]]] = {}
    for case_id, repetition, status, error in (
        Trial.objects.filter(run=run)
        .order_by("case_id", "repetition")
        .values_list("case_id", "repetition", "status", "error")
    ):
        repetitions.setdefault(case_id, []).append((repetition, status, error))
    classname = run.dataset_version.dataset.slug
    suite = ElementTree.Element("testsuite")
    properties = _element(suite, "properties")
    for name, value in (
        ("run", run.pk),
        ("agent_version", run.agent_version),
        ("dataset_version", run.dataset_version),
        ("status", run.status),
        ("repetitions", run.repetitions),
        ("outcome", verdict.outcome),
        ("case_pass_rate", (run.summary or {}).get("case_pass_rate")),
    ):
        _element(properties, "property", name=name, value="" if value is None else value)
    failures = errors = 0
    for result in results:
        testcase = _element(suite, "testcase", classname=classname, name=result.case.key)
        if result.status == CaseStatus.UNSCORED:
            errors += 1
            reason = result.reason or "unscored"
            _element(
                testcase,
                "error",
                f"{result.repetitions_unscored} of {result.repetitions} repetition(s) could "
                f"not be scored: {reason}",
                message=xml_safe(f"no verdict: {reason}", MESSAGE_CHARS),
                type=reason.replace(" ", "_"),
            )
        elif result.status in (CaseStatus.FAILED, CaseStatus.FLAKY):
            failures += 1
            failed = _failed_checks(result)
            _element(
                testcase,
                "failure",
                "\n".join(failed) or "its blocking checks failed",
                message=xml_safe(
                    f"{result.repetitions_passed}/{result.repetitions} repetition(s) passed; "
                    f"failed: {', '.join(_labels(result)) or 'its blocking checks'}",
                    MESSAGE_CHARS,
                ),
                type=str(result.status),
            )
        lines = [
            f"repetition {number}: {status}" + (f": {error}" if error else "")
            for number, status, error in repetitions.get(result.case_id, [])
        ]
        if lines:
            _element(testcase, "system-out", "\n".join(lines))
    verdict_case = _element(suite, "testcase", classname="sherlock", name="verdict")
    if not verdict.passed:
        failures += 1
        reasons = [reason.detail for reason in verdict.reasons]
        missing = [f"missing: {item.detail}; to add it: {item.fix}" for item in verdict.missing]
        _element(
            verdict_case,
            "failure",
            "\n".join([*reasons, *missing]) or verdict.outcome,
            message=xml_safe(f"{verdict.words}: {'; '.join(reasons)}", MESSAGE_CHARS),
            type=verdict.outcome,
        )
    for name, value in (
        ("name", f"{run.agent_version} on {run.dataset_version}"),
        ("tests", len(results) + 1),
        ("failures", failures),
        ("errors", errors),
        ("skipped", 0),
    ):
        suite.set(name, xml_safe(value))
    ElementTree.indent(suite)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        + ElementTree.tostring(suite, encoding="unicode")
        + "\n"
    )


def _labels(result) -> list[str]:
    return [
        label
        for label, info in (result.checks or {}).items()
        if info.get("blocking") and info.get("statuses", {}).get("failed")
    ]


def _failed_checks(result) -> list[str]:
    return [
        f"{label}: failed in {info['statuses']['failed']} of {result.repetitions} "
        f"repetition(s), mean score {info.get('mean')}"
        for label, info in (result.checks or {}).items()
        if info.get("blocking") and info.get("statuses", {}).get("failed")
    ]
