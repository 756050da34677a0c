"""JUnit XML read as a CI reads it: validated against the Jenkins/Surefire schema
(`tests/fixtures/junit-10.xsd`) and parsed by junitparser, the reader many CI tools' plugins use.
"""

from pathlib import Path

import junitparser
import xmlschema

SCHEMA = xmlschema.XMLSchema10(Path(__file__).parent.parent / "fixtures" / "junit-10.xsd")


def read_junit(text: str) -> junitparser.TestSuite:
    """The one `<testsuite>` of `text`, after checking it is well-formed and valid."""
    SCHEMA.validate(text)
    suites = list(junitparser.JUnitXml.fromstring(text))  # a lone suite is wrapped in one
    assert len(suites) == 1, suites
    return suites[0]


def outcomes(suite: junitparser.TestSuite) -> dict[str, str]:
    """{testcase name: "passed" | "failure" | "error" | "skipped"} as a CI shows them."""
    found = {}
    for case in suite:
        kinds = [type(r).__name__.lower() for r in case.result]
        found[case.name] = kinds[0] if kinds else "passed"
    return found
