"""Fixtures the evaluations tests share."""

import pytest

from tests.support import factories
from tests.support.schedules import SHAPE


@pytest.fixture
def pair(db):
    """An agent with a live version, and a frozen dataset version of two cases."""
    agent = factories.agent()
    live = factories.agent_version(agent)
    agent.live_version = live
    agent.save(update_fields=["live_version"])
    v1 = factories.dataset_version(cases=[("a", "q", {}), ("b", "q", {})], checks=[SHAPE])
    return agent, live, v1.dataset, v1
