"""The pages a person uses, in a real browser: Debian's chromium driven by Playwright.

A real `runserver` process serves the test database; the browser logs in, opens a run, watches
its progress update live (htmx polling, no reload) and sees the results grid when it finishes.
The server and browser fixtures are in tests/browser/conftest.py.
"""

import pytest

from evaluations.engine import run_shard
from evaluations.models import Run, Trial
from tests.support import factories

pytestmark = [pytest.mark.slow]


def test_a_person_watches_a_run_finish_and_reads_its_grid(server, browser):
    factories.user("builder", role="Builder")
    version = factories.agent_version(callable_path="tests.support.agents_under_test.echo")
    dataset_version = factories.dataset_version(
        cases=[
            ("greeting", "hello", {"expected_tools": [{"name": "kb.search"}]}),
            ("farewell", "bye", {}),
        ],
        checks=[{"label": "Tools", "kind": "tools_used", "params": {}, "threshold": 1.0}],
    )
    run = Run.objects.create(
        agent_version=version, dataset_version=dataset_version, status="running", trials_total=2
    )
    for cv in dataset_version.case_versions.all():
        Trial.objects.create(run=run, case=cv.case, case_version=cv, repetition=1)

    page = browser.new_page()
    page.goto(f"{server}/admin/login/?next=/runs/")
    page.fill("#id_username", "builder")
    page.fill("#id_password", factories.PASSWORD)
    page.click("input[type=submit]")
    page.click(f"a[href='/runs/{run.pk}/']")
    page.wait_for_selector("text=0/2")
    assert page.evaluate("typeof htmx") == "object"  # the vendored htmx loaded, no CDN

    # The run finishes behind the page's back: the page follows without a reload.
    run_shard(run.pk, list(run.trials.values_list("pk", flat=True)))
    page.wait_for_selector("table >> text=greeting", timeout=15000)
    grid = page.inner_text("main")
    assert "completed" in grid and "2/2" in grid
    assert "Tools" in grid and "passed" in grid


def test_a_person_reads_the_agents_warnings_on_the_trial_page(server, browser, tmp_path):
    factories.user("root", is_superuser=True)
    version = factories.agent_version()
    dataset_version = factories.dataset_version(cases=[("greeting", "hello", {})])
    run = Run.objects.create(agent_version=version, dataset_version=dataset_version)
    case_version = dataset_version.case_versions.get()
    warning = "answer 1 was cut off at the token limit (finish_reason length, max_tokens 5)"
    trial = Trial.objects.create(
        run=run,
        case=case_version.case,
        case_version=case_version,
        repetition=1,
        status="completed",
        transcript={
            "output": "Hello, how can I he",
            "finish_reason": "length",
            "warnings": [warning],
        },
    )

    page = browser.new_page()
    page.goto(f"{server}/admin/login/?next=/admin/evaluations/trial/{trial.pk}/change/")
    page.fill("#id_username", "root")
    page.fill("#id_password", factories.PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("text=Warnings")
    page.screenshot(path=str(tmp_path / "trial.png"), full_page=True)
    assert warning in page.inner_text(".field-transcript_warnings")
