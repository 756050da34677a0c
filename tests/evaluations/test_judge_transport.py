"""KeepAliveTransport on real loopback sockets: through the OpenAI SDK against the LLM server, and
against tiny raw-socket servers that answer canned bytes for the wire's edge cases. No mocks."""

import gzip
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable

import httpx2
import openai
import pytest

from evaluations.judge.transport import KeepAliveTransport
from tests.support.llm_server import hang, rate_limited, server_error

MESSAGES = [{"role": "user", "content": "Is the answer supported?"}]


def sdk_client(base_url: str, transport: KeepAliveTransport, timeout: float = 5) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=base_url,
        api_key="sk-x",
        max_retries=0,
        timeout=timeout,
        http_client=httpx2.Client(transport=transport),
    )


@pytest.fixture
def transport():
    with KeepAliveTransport() as transport:
        yield transport


@pytest.fixture
def sdk(llm_server, transport):
    return sdk_client(llm_server.url, transport)


def ask(client: openai.OpenAI, text: str = "Is the answer supported?") -> str | None:
    completion = client.chat.completions.create(
        model="judge", messages=[{"role": "user", "content": text}]
    )
    return completion.choices[0].message.content


# --- a raw-socket server with canned replies ------------------------------------------------


def read_request(conn: socket.socket) -> bytes | None:
    """One request, head and body (Content-Length or chunked), or None if the client closed."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    head = data.split(b"\r\n\r\n", 1)[0].lower()
    if b"transfer-encoding: chunked" in head:
        while not data.endswith(b"\r\n0\r\n\r\n") and not data.endswith(b"\r\n\r\n0\r\n\r\n"):
            data += conn.recv(65536)
    else:
        length = re.search(rb"content-length: *(\d+)", head)
        while len(data) < len(head) + 4 + (int(length.group(1)) if length else 0):
            data += conn.recv(65536)
    return data


class RawServer:
    """Answers each request, on whichever connection it comes, with the next reply: bytes to
    send, or a callable that takes the socket (to misbehave). `close=True` closes the connection
    after each reply. `connections` counts accepted connections, `requests` keeps what came."""

    def __init__(
        self, *replies: bytes | Callable, close: bool = False, tls: ssl.SSLContext | None = None
    ):
        self.replies = list(replies)
        self.close = close
        self.tls = tls
        self.requests: list[bytes] = []
        self.connections = 0
        self.closed = threading.Semaphore(0)  # released when a connection has been closed
        self.release = threading.Event()  # ends the hangs
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        try:
            if self.tls:
                conn = self.tls.wrap_socket(conn, server_side=True)
            while (request := read_request(conn)) is not None:
                self.requests.append(request)
                reply = self.replies.pop(0)
                if callable(reply):
                    reply(conn)
                    break
                conn.sendall(reply)
                if self.close:
                    break
        except OSError:
            pass  # a client that gave up, or a failed TLS handshake
        finally:
            conn.close()
            self.closed.release()

    def hang(self, conn: socket.socket) -> None:
        self.release.wait(10)

    def stop(self) -> None:
        self.release.set()
        self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() up
        self.sock.close()

    def __enter__(self) -> "RawServer":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def reply(status: str = "200 OK", body: bytes = b"", *headers: str, length: bool = True) -> bytes:
    lines = [f"HTTP/1.1 {status}", *headers]
    if length:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def disconnect(conn: socket.socket) -> None:
    """A reply that answers nothing: the server then closes the connection."""


@pytest.fixture
def client(transport):
    with httpx2.Client(transport=transport, timeout=5) as client:
        yield client


# --- through the SDK, against the LLM server ------------------------------------------------


def test_chat_completion_through_the_sdk(llm_server, sdk):
    llm_server.script([{"score": 0.75, "reason": "supported"}])

    completion = sdk.chat.completions.create(model="judge", messages=MESSAGES)

    assert json.loads(completion.choices[0].message.content) == {
        "score": 0.75,
        "reason": "supported",
    }
    assert completion.model == "judge"
    assert completion.usage.prompt_tokens > 0
    assert llm_server.requests[0]["messages"] == MESSAGES
    method, path, headers = llm_server.log[0]
    assert (method, path) == ("POST", "/v1/chat/completions")
    assert headers["authorization"] == "Bearer sk-x"
    assert headers["content-type"] == "application/json"


def test_keep_alive_reuses_one_connection(llm_server, sdk):
    llm_server.responder = lambda body: body["messages"][0]["content"].upper()

    answers = [ask(sdk, f"question {i}") for i in range(30)]

    assert answers == [f"QUESTION {i}" for i in range(30)]
    assert llm_server.connections == 1


def test_many_threads_at_once(llm_server, sdk):
    llm_server.responder = lambda body: "echo " + body["messages"][0]["content"]
    wrong: list[tuple[str, str | None]] = []

    def work(thread: int) -> None:
        for i in range(20):
            question = f"{thread}-{i}"
            answer = ask(sdk, question)
            if answer != "echo " + question:
                wrong.append((question, answer))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert wrong == []
    assert llm_server.request_count == 160
    assert 1 <= llm_server.connections <= 8


def test_rate_limit_reaches_the_sdk_with_retry_after(llm_server, sdk):
    llm_server.script([rate_limited(retry_after=2), server_error(503), "fine"])

    with pytest.raises(openai.RateLimitError) as limited:
        ask(sdk)
    with pytest.raises(openai.InternalServerError) as failed:
        ask(sdk)

    assert limited.value.status_code == 429
    assert limited.value.response.headers["retry-after"] == "2"
    assert limited.value.response.headers["retry-after-ms"] == "2000"
    assert "Rate limit reached." in limited.value.message
    assert failed.value.status_code == 503
    assert ask(sdk) == "fine"
    assert llm_server.connections == 1  # error answers have a length: the connection stays


def test_hang_past_the_read_timeout_is_a_timeout(llm_server, transport):
    sdk = sdk_client(llm_server.url, transport, timeout=0.3)
    llm_server.script([hang(10), "after"])

    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError) as timed_out:
        ask(sdk)

    assert 0.25 < time.monotonic() - started < 2
    assert isinstance(timed_out.value.__cause__, httpx2.ReadTimeout)
    assert ask(sdk) == "after"
    assert llm_server.connections == 2  # the timed-out connection was not reused


def test_a_pooled_connection_is_not_shared_with_a_forked_child(llm_server, sdk):
    assert ask(sdk, "parent") == "ok"
    pid = os.fork()
    if pid == 0:  # the child: must open its own connection
        try:
            os._exit(0 if ask(sdk, "child") == "ok" else 1)
        finally:
            os._exit(2)
    deadline = time.monotonic() + 10
    while (waited := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    if waited[0] == 0:  # never hang the suite on a child stuck on a lock copied by the fork
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)

    assert waited[0] == pid
    assert os.waitstatus_to_exitcode(waited[1]) == 0
    assert ask(sdk, "parent again") == "ok"
    assert llm_server.connections == 2  # the parent's, reused, and the child's own
    assert [r["messages"][0]["content"] for r in llm_server.requests] == [
        "parent",
        "child",
        "parent again",
    ]


# --- response framing, against raw servers --------------------------------------------------


def test_chunked_response_with_extension_and_trailer(client):
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n"
        b"5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nX-Checksum: abc\r\n\r\n"
    )
    with RawServer(chunked, reply(body=b"next")) as server:
        first = client.get(server.url + "/a?b=c")
        second = client.get(server.url + "/d")

    assert first.status_code == 200
    assert first.text == "hello world"
    assert first.headers["transfer-encoding"] == "chunked"
    assert second.text == "next"
    assert server.connections == 1  # the trailer was read to its end
    assert server.requests[0].startswith(b"GET /a?b=c HTTP/1.1\r\n")


def test_body_until_close_for_http_1_0(client):
    old = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n" + b"x" * 200_000
    with RawServer(old, reply(body=b"second"), close=True) as server:
        first = client.get(server.url)
        second = client.get(server.url)

    assert first.content == b"x" * 200_000
    assert first.extensions["http_version"] == b"HTTP/1.0"
    assert second.text == "second"
    assert server.connections == 2


def test_http_1_0_keep_alive_is_reused(client):
    kept = b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok"
    with RawServer(kept, kept) as server:
        assert [client.get(server.url).text for _ in range(2)] == ["ok", "ok"]

    assert server.connections == 1


def test_connection_close_is_not_reused(client):
    closing = reply("200 OK", b"one", "Connection: close")
    with RawServer(closing, reply(body=b"two")) as server:  # the server leaves it open
        assert client.get(server.url).text == "one"
        assert client.get(server.url).text == "two"

    assert server.connections == 2


def test_100_continue_is_skipped(client):
    interim = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
    with RawServer(interim + reply("201 Created", b"done", "X-Final: yes")) as server:
        response = client.post(server.url, content=b"payload")

    assert response.status_code == 201
    assert response.text == "done"
    assert response.headers["x-final"] == "yes"
    assert "link" not in response.headers
    assert response.extensions["reason_phrase"] == b"Created"


def test_head_and_204_have_no_body(client):
    with RawServer(
        reply("200 OK", b"", "Content-Length: 1000", length=False),
        reply("204 No Content", length=False),
        reply(body=b"after"),
    ) as server:
        head = client.head(server.url)
        empty = client.delete(server.url)
        after = client.get(server.url)

    assert (head.status_code, head.headers["content-length"], head.content) == (200, "1000", b"")
    assert (empty.status_code, empty.content) == (204, b"")
    assert after.text == "after"
    assert server.connections == 1


def test_gzip_body_is_decoded_by_httpx2_through_the_sdk(transport):
    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "judge",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "compressed"},
                "finish_reason": "stop",
            }
        ],
    }
    body = gzip.compress(json.dumps(completion).encode())
    headers = ("Content-Type: application/json", "Content-Encoding: gzip")
    with RawServer(reply("200 OK", body, *headers)) as server:
        answer = ask(sdk_client(server.url + "/v1", transport))

    assert answer == "compressed"
    assert b"accept-encoding: gzip" in server.requests[0].lower()


def test_streamed_request_body_is_sent_chunked(client):
    with RawServer(reply(body=b"got it")) as server:
        response = client.post(server.url, content=iter([b"ab", b"", b"cde"]))

    assert response.text == "got it"
    head, _, body = server.requests[0].partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head.lower()
    assert b"content-length" not in head.lower()
    assert body == b"2\r\nab\r\n3\r\ncde\r\n0\r\n\r\n"


# --- stale, expired and closed connections ---------------------------------------------------


def test_server_closing_an_idle_connection(client):
    with RawServer(reply(body=b"one"), reply(body=b"two"), close=True) as server:
        assert client.get(server.url).text == "one"
        assert server.closed.acquire(timeout=2)  # the server has closed the idle connection
        time.sleep(0.01)
        assert client.get(server.url).text == "two"

    assert server.connections == 2


@pytest.mark.parametrize(
    ("options", "pause"), [({"keepalive_expiry": 0.05}, 0.1), ({"max_keepalive": 0}, 0)]
)
def test_expired_or_unkept_connections_are_not_reused(options, pause):
    transport = KeepAliveTransport(**options)
    with (
        RawServer(reply(body=b"1"), reply(body=b"2")) as server,
        httpx2.Client(transport=transport) as client,
    ):
        assert client.get(server.url).text == "1"
        time.sleep(pause)
        assert client.get(server.url).text == "2"

    assert server.connections == 2


def test_close_closes_the_idle_connections(transport, client):
    with RawServer(reply(body=b"1"), reply(body=b"2")) as server:
        client.get(server.url)
        transport.close()
        assert server.closed.acquire(timeout=2)
        assert client.get(server.url).text == "2"

    assert server.connections == 2


# --- errors ------------------------------------------------------------------------------------


def test_eof_before_the_status_line(transport, client):
    with RawServer(disconnect, disconnect) as server:
        with pytest.raises(httpx2.RemoteProtocolError, match="without sending a response"):
            client.get(server.url)
        with pytest.raises(openai.APIConnectionError) as through_sdk:
            ask(sdk_client(server.url + "/v1", transport))

    assert isinstance(through_sdk.value.__cause__, httpx2.RemoteProtocolError)


def test_read_timeout(transport):
    with RawServer() as server:
        server.replies.append(server.hang)
        request = httpx2.Request("GET", server.url, extensions={"timeout": {"read": 0.2}})
        started = time.monotonic()
        with pytest.raises(httpx2.ReadTimeout) as timed_out:
            transport.handle_request(request)

    assert 0.15 < time.monotonic() - started < 2
    assert timed_out.value.request is request


def test_connection_refused(client):
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with pytest.raises(httpx2.ConnectError) as refused:
        client.get(f"http://127.0.0.1:{port}/")

    assert refused.value.request.url.port == port


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Le",
    ],
    ids=["content-length", "chunk", "last-chunk", "head"],
)
def test_truncated_response_is_an_error(client, answer):
    with (
        RawServer(answer, close=True) as server,
        pytest.raises(httpx2.RemoteProtocolError, match="before the end of the response"),
    ):
        client.get(server.url)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (b"HTTP/2 200 OK\r\n\r\n", "Malformed status line"),
        (b"HTTP/1.1 2000 OK\r\n\r\n", "Malformed status line"),
        (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "Malformed status line"),
        (b"HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\n\r\n", "Malformed header line"),
        (b"HTTP/1.1 200 OK\r\nBad Name: 1\r\n\r\n", "Malformed header line"),
        (b"HTTP/1.1 200 OK\r\nX-A: 1\nX-B: 2\r\n\r\n", "Stray CR or LF"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\nabc", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\n", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "Transfer-Encoding"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\n", "chunk size"),
    ],
)
def test_malformed_response_is_a_protocol_error(client, answer, message):
    with (
        RawServer(answer, close=True) as server,
        pytest.raises(httpx2.RemoteProtocolError, match=message),
    ):
        client.get(server.url)


def test_unsupported_scheme(transport):
    request = httpx2.Request("GET", "ftp://127.0.0.1/file")

    with pytest.raises(httpx2.UnsupportedProtocol) as unsupported:
        transport.handle_request(request)

    assert unsupported.value.request is request


def test_header_injection_is_refused(client):
    with RawServer(reply(body=b"never")) as server:
        with pytest.raises(httpx2.LocalProtocolError, match="CR or LF"):
            client.get(server.url, headers={"X-A": "1\r\nX-Injected: yes"})
        assert server.closed.acquire(timeout=2)  # closed without sending a byte

    assert server.requests == []


# --- TLS ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
        + ["-nodes", "-days", "1", "-subj", "/CN=localhost"]
        + ["-addext", "subjectAltName=DNS:localhost", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    return server, ssl.create_default_context(cafile=str(cert))


def test_https_with_hostname_check(certificate):
    server_context, client_context = certificate
    transport = KeepAliveTransport(verify=client_context)
    with (
        RawServer(reply(body=b"secret"), reply(body=b"again"), tls=server_context) as server,
        httpx2.Client(transport=transport) as client,
    ):
        by_name = f"https://localhost:{server.port}/"
        assert [client.get(by_name).text for _ in range(2)] == ["secret", "again"]
        assert server.connections == 1
        # The certificate names localhost only: by IP address the hostname check fails.
        with pytest.raises(httpx2.ConnectError, match="certificate|match"):
            client.get(server.url)


def test_an_answer_before_the_whole_body_was_sent_is_the_outcome(transport):
    # A gateway that refuses after the headers (a 401, a 413) and closes while the body is still
    # being sent: the client gets that answer, not a broken pipe it would retry.
    refusal = reply("401 Unauthorized", b'{"error": "bad key"}', "Connection: close")
    server = socket.create_server(("127.0.0.1", 0))

    def refuse() -> None:
        conn, _ = server.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            conn.sendall(refusal)
            time.sleep(0.05)

    threading.Thread(target=refuse, daemon=True).start()
    url = httpx2.URL(f"http://127.0.0.1:{server.getsockname()[1]}/v1/chat/completions")
    body = b"x" * 12_000_000
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(
        body
    )
    try:
        raw = transport.exchange(url, head + body, {"connect": 2, "read": 2, "write": 2})
    finally:
        server.close()
    assert (raw.status, raw.body) == (401, b'{"error": "bad key"}')
