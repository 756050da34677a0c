"""Fixtures for anything that talks to a model: the loopback LLM server and judges pointed at it.

Registered from tests/conftest.py (`pytest_plugins`). One server runs for the whole session
(starting one per test would cost a thread and a port each time); `llm_server` hands it to a
test with its script, recorded requests, responder and latency reset.

- `llm_server`: the `tests.support.llm_server.LLMServer`, clean for this test.
- `judge`: a `JudgeClient` on that server with a 1 s timeout, 2 retries and backoffs capped at
  50 ms, recording to the database (mark the test `django_db`).
- `judge_settings`: the `settings` fixture pointed at that server with the same fast limits, so
  `get_default_judge()` (what the run engine uses) returns a judge on the loopback server.
"""

import pytest

from tests.support.llm_server import LLMServer

JUDGE_MODEL = "judge-test"


@pytest.fixture(scope="session")
def llm_server_session():
    with LLMServer(model=JUDGE_MODEL) as server:
        yield server


@pytest.fixture
def llm_server(llm_server_session):
    llm_server_session.reset()
    yield llm_server_session
    llm_server_session.reset()


@pytest.fixture
def judge(llm_server):
    from evaluations.judge import JudgeClient

    return JudgeClient(
        base_url=llm_server.url,
        api_key="sk-test",
        model=JUDGE_MODEL,
        timeout=1,
        max_retries=2,
        base_backoff=0.01,
        max_backoff=0.05,
        max_retry_after=5,
    )


@pytest.fixture
def judge_settings(settings, llm_server):
    from evaluations.judge import reset_default_judges

    settings.SHERLOCK_JUDGE_BASE_URL = llm_server.url
    settings.SHERLOCK_JUDGE_MODEL = JUDGE_MODEL
    settings.SHERLOCK_JUDGE_TIMEOUT = 1
    settings.SHERLOCK_JUDGE_MAX_RETRIES = 2
    settings.SHERLOCK_JUDGE_MAX_BACKOFF = 0.05
    # The default judges keep an in-memory cache: start and end clean, since the database
    # rows that stood behind it are rolled back with each test.
    reset_default_judges()
    yield settings
    reset_default_judges()
