import pytest

from tests.support import factories
from tests.support.governance import api_key


@pytest.fixture
def agent(db):
    obj = factories.agent("support-bot")
    factories.agent_version(obj, number=1)
    return obj


@pytest.fixture
def builder_key(builder):
    return api_key(builder)[1]


@pytest.fixture
def live(live_db):
    """A live server in this process over committed data (django-q2's tasks run in it,
    synchronously, as in every test); pytest-django's `live_server` fixture would flush the
    database before `live_db` drops the audit log's append-only trigger."""
    from pytest_django.live_server_helper import LiveServer

    server = LiveServer("127.0.0.1:0")
    yield server
    server.stop()
