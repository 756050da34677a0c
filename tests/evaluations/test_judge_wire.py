"""How the judge's requests reach the wire: the SDK over our keep-alive transport by default,
byte for byte what the SDK itself would send, and the SDK's own transport when asked or when a
proxy applies (evaluations/judge/client.py `_http_client`, `_Poster`)."""

import gzip
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx2
import openai
import pytest
from django.db import connection, transaction
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from evaluations.judge import MemoryRecorder
from evaluations.judge.client import CONNECTION, HTTP_ERROR, _http_client, _poster, openai_client
from evaluations.judge.recording import lookup_cached
from evaluations.judge.transport import KeepAliveTransport
from evaluations.models import JudgeCall
from tests.evaluations.test_judge import GOOD, RELEVANCE, VARIABLES, fast_judge
from tests.support.judge_fixtures import JUDGE_MODEL

ROOT = Path(__file__).resolve().parent.parent.parent


def completion(content: dict) -> bytes:
    return json.dumps(
        {
            "id": "c1",
            "object": "chat.completion",
            "model": JUDGE_MODEL,
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": json.dumps(content)},
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
    ).encode()


class CannedServer:
    """Answers every request on 127.0.0.1 with the same bytes, keeping the connection open."""

    def __init__(self, response: bytes):
        self.response = response
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.requests = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        buffer = b""
        with conn:
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                while len(buffer) < length:
                    buffer += conn.recv(65536)
                buffer = buffer[length:]
                self.requests += 1
                conn.sendall(self.response)

    def close(self):
        self.sock.close()


def test_the_fast_path_goes_through_our_transport_and_sends_what_the_sdk_sends(
    llm_server, settings
):
    llm_server.script([GOOD, GOOD])
    ours = fast_judge(llm_server, api_key="sk-wire-ours", cache_size=0)
    assert ours.ask(RELEVANCE, VARIABLES).data == GOOD  # its SDK client is built here
    settings.SHERLOCK_JUDGE_TRANSPORT = "httpx"
    sdk_default = fast_judge(llm_server, api_key="sk-wire-sdk", cache_size=0)
    assert sdk_default.ask(RELEVANCE, VARIABLES).data == GOOD

    fast = _poster(ours._core.sdk, ours._core.timeout)
    slow = _poster(sdk_default._core.sdk, sdk_default._core.timeout)
    assert isinstance(fast.transport, KeepAliveTransport)
    assert slow.transport is None
    assert not isinstance(sdk_default._core.sdk._client._transport, KeepAliveTransport)
    (_, first_path, first), (_, second_path, second) = llm_server.log[-2:]
    assert first_path == second_path == "/v1/chat/completions"
    drop = {"authorization"}  # the two keys differ on purpose (two SDK clients)
    assert {k: v for k, v in first.items() if k not in drop} == {
        k: v for k, v in second.items() if k not in drop
    }
    assert first["authorization"] == "Bearer sk-wire-ours"
    assert llm_server.requests[-2] == llm_server.requests[-1]


def uses_our_transport(base_url):
    client = _http_client(base_url)
    return client is not None and isinstance(
        client._transport_for_url(httpx2.URL(base_url)), KeepAliveTransport
    )


def test_an_environment_proxy_gets_the_sdk_default_transport(monkeypatch, settings):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    assert uses_our_transport("http://judge.internal/v1")

    monkeypatch.setenv("HTTP_PROXY", "http://proxy.internal:3128")
    assert not uses_our_transport("http://judge.internal/v1")
    assert uses_our_transport("https://judge.internal/v1")  # no HTTPS_PROXY set

    monkeypatch.setenv("NO_PROXY", "judge.internal")
    assert uses_our_transport("http://judge.internal/v1")

    # httpx2's rules decide, not urllib's: here httpx2 still proxies the bare domain.
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", ".corp.example")
    plain = openai.DefaultHttpxClient()
    url = httpx2.URL("https://corp.example/v1")
    proxied = plain._transport_for_url(url) is not plain._transport
    assert uses_our_transport("https://corp.example/v1") is not proxied

    settings.SHERLOCK_JUDGE_TRANSPORT = "httpx"
    assert _http_client("http://judge.internal/v1") is None


def test_a_header_httpx2_would_refuse_keeps_the_sdk_path(llm_server):
    # A key read from a CRLF .env file ends in CR: httpx2 refuses to send it, and so must we.
    poster = _poster(openai_client(llm_server.url, "sk-abc\r", 1.0), 1.0)
    assert poster.headers is not None and poster.transport is None
    answer = fast_judge(llm_server, api_key="sk-abc\r").ask(RELEVANCE, VARIABLES)
    assert not answer.ok and answer.error_code == CONNECTION
    assert llm_server.requests == []


def test_a_gzip_encoded_answer_is_decoded():
    body = gzip.compress(completion(GOOD))
    server = CannedServer(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    try:
        judge = fast_judge(server, cache_size=0)
        answers = [judge.ask(RELEVANCE, {**VARIABLES, "answer": str(n)}) for n in range(2)]
    finally:
        server.close()

    assert [answer.data for answer in answers] == [GOOD, GOOD]
    assert server.requests == 2


def test_a_redirect_is_an_http_error_that_is_not_followed_or_retried():
    server = CannedServer(
        b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://elsewhere.invalid/v1\r\n"
        b"Content-Length: 0\r\n\r\n"
    )
    recorder = MemoryRecorder()
    try:
        answer = fast_judge(server, recorder=recorder, cache_size=0).ask(RELEVANCE, VARIABLES)
    finally:
        server.close()

    assert not answer.ok and answer.data is None
    assert answer.error_code == HTTP_ERROR
    assert "307" in answer.error
    assert server.requests == 1
    assert [call.status for call in recorder.calls] == [JudgeCall.Status.ERROR]


@pytest.mark.django_db
def test_the_cache_lookup_shows_in_the_query_log_when_queries_are_logged(judge, llm_server):
    llm_server.script([GOOD])
    stored = judge.ask(RELEVANCE, VARIABLES)

    with CaptureQueriesContext(connection) as queries:
        found = lookup_cached(stored.cache_key)
    assert (found.raw, found.source_call_id) == (stored.raw, stored.calls[0].pk)
    assert len(queries) == 1 and "cache_key" in queries[0]["sql"]

    # Unlogged, it goes to the driver's cursor: same answer, a miss is None.
    assert lookup_cached(stored.cache_key).source_call_id == stored.calls[0].pk
    assert lookup_cached("0" * 64) is None


@pytest.mark.django_db
def test_the_driver_cursor_refuses_a_transaction_marked_for_rollback():
    # As Django's own cursor does: after an error inside atomic(), no further statement.
    with transaction.atomic():
        transaction.set_rollback(True)
        with pytest.raises(TransactionManagementError):
            lookup_cached("0" * 64)


def test_an_unknown_transport_setting_stops_start_up():
    env = {**os.environ, "SHERLOCK_JUDGE_TRANSPORT": "curl"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "SHERLOCK_JUDGE_TRANSPORT" in result.stderr
