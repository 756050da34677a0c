"""A lean HTTP/1.1 keep-alive transport for the judge's OpenAI SDK client.

httpx2's default transport (httpcore2 and h11) costs about 0.6 ms of CPU per request on a small
machine, and about 2 ms after the thread has waited for a slow server (cold caches): most of our
2 ms budget of client CPU per judge call. This one replaces only the wire part: the SDK still
builds requests, authenticates, maps errors and decodes responses (gzip too, in httpx2.Response).

It speaks HTTP/1.1 to `http` and `https` URLs over a thread-safe pool of keep-alive connections,
honours the connect/write/read timeouts of the request's `timeout` extension, and raises httpx2's
exceptions. It does not do proxies (the caller keeps httpx2's default transport when one is
configured), HTTP/2, a limit on open connections, retries, or streaming responses: a body is read
completely before `handle_request` returns, as the SDK does anyway for a non-streaming call.
"""

from __future__ import annotations

import os
import re
import select
import socket
import ssl
import threading
import time
from typing import NamedTuple

import httpx2

__all__ = ["KeepAliveTransport", "RawResponse"]

_Key = tuple[str, str, int]  # (scheme, host, port)
_Error = httpx2.TransportError

_DEFAULT_PORTS = {"http": 80, "https": 443}
_RECV_SIZE = 65536
_MAX_LINE = 65536  # the longest response head, or chunk-size or trailer line, accepted
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # a header name (RFC 9110 token)
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")
_NO_RESPONSE = "Server disconnected without sending a response."
_INCOMPLETE = "Server disconnected before the end of the response."


def _mapped(exc: OSError, timeout: type[_Error], error: type[_Error]) -> _Error:
    """The httpx2 exception for a socket error: `timeout` for a timeout, else `error`."""
    return (timeout if isinstance(exc, TimeoutError) else error)(str(exc) or type(exc).__name__)


def _parse_head(head: bytes) -> tuple[bytes, int, bytes, list[tuple[bytes, bytes]]]:
    """(HTTP version, status code, reason phrase, raw headers) of a response head."""
    lines = head.split(b"\r\n")
    if head.count(b"\r") != len(lines) - 1 or head.count(b"\n") != len(lines) - 1:
        raise httpx2.RemoteProtocolError("Stray CR or LF in the response head.")
    version, _, rest = lines[0].partition(b" ")
    code, _, reason = rest.partition(b" ")
    if version not in (b"HTTP/1.1", b"HTTP/1.0") or len(code) != 3 or not code.isdigit():
        raise httpx2.RemoteProtocolError(f"Malformed status line: {lines[0][:100]!r}")
    headers = []
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.fullmatch(name):  # obs-fold lines start with a space: no
            raise httpx2.RemoteProtocolError(f"Malformed header line: {line[:100]!r}")
        headers.append((name, value.strip(b" \t")))
    return version, int(code), reason, headers


def _framing(headers: list[tuple[bytes, bytes]]) -> tuple[bool, int | None, set[bytes]]:
    """(chunked, Content-Length, Connection options) of a response."""
    values: dict[bytes, list[bytes]] = {}
    for name, value in headers:
        values.setdefault(name.lower(), []).append(value)
    options = {o.strip().lower() for v in values.get(b"connection", ()) for o in v.split(b",")}
    if b"transfer-encoding" in values:
        if [v.lower() for v in values[b"transfer-encoding"]] != [b"chunked"]:
            raise httpx2.RemoteProtocolError("Unsupported Transfer-Encoding.")
        if b"content-length" in values:  # RFC 9112 6.3: chunked wins, and the connection ends
            options.add(b"close")
        return True, None, options
    lengths = {n.strip() for v in values.get(b"content-length", ()) for n in v.split(b",")}
    if len(lengths) > 1 or not all(length.isdigit() for length in lengths):
        raise httpx2.RemoteProtocolError("Invalid or conflicting Content-Length.")
    return False, int(lengths.pop()) if lengths else None, options


def _readable(sock: socket.socket) -> bool:
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([sock], [], [], 0)[0])  # Windows has no poll


class _Connection:
    """A socket and its read buffer; one request at a time uses it."""

    __slots__ = ("buffer", "idle_since", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()
        self.idle_since = 0.0

    def fill(self) -> bool:
        """Receive more bytes into the buffer; False at the end of the stream."""
        try:
            data = self.sock.recv(_RECV_SIZE)
        except OSError as exc:
            raise _mapped(exc, httpx2.ReadTimeout, httpx2.ReadError) from exc
        self.buffer += data
        return bool(data)

    def read_until(self, separator: bytes, at_eof: str = _INCOMPLETE) -> bytes:
        """The bytes before `separator` (consumed with it); EOF raises, `at_eof` if nothing came."""
        start = 0
        while (end := self.buffer.find(separator, start)) < 0:
            if len(self.buffer) > _MAX_LINE:
                raise httpx2.RemoteProtocolError("Response head or chunk line too long.")
            start = max(len(self.buffer) - len(separator) + 1, 0)
            if not self.fill():
                raise httpx2.RemoteProtocolError(_INCOMPLETE if self.buffer else at_eof)
        data = bytes(self.buffer[:end])
        del self.buffer[: end + len(separator)]
        return data

    def read_exact(self, size: int) -> bytes:
        while len(self.buffer) < size:
            if not self.fill():
                raise httpx2.RemoteProtocolError(_INCOMPLETE)
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    def read_chunked(self) -> bytes:
        parts = []
        while True:
            size = self.read_until(b"\r\n").partition(b";")[0].strip()  # chunk extensions: skipped
            if not _CHUNK_SIZE.fullmatch(size):
                raise httpx2.RemoteProtocolError(f"Malformed chunk size: {size[:100]!r}")
            if not (chunk_size := int(size, 16)):
                break
            parts.append(self.read_exact(chunk_size))
            if self.read_exact(2) != b"\r\n":
                raise httpx2.RemoteProtocolError("Malformed chunk: no CRLF after the data.")
        while self.read_until(b"\r\n"):  # trailer fields, up to the empty line: skipped
            pass
        return b"".join(parts)

    def send_request(self, request: httpx2.Request, timeout: float | None) -> None:
        self.sock.settimeout(timeout)
        headers = request.headers
        try:
            body: bytes | None = request.content
        except httpx2.RequestNotRead:  # a streaming body
            body = None
        lines = [b"%s %s HTTP/1.1" % (request.method.encode("ascii"), request.url.raw_path)]
        lines += [b"%s: %s" % pair for pair in headers.raw]
        has_te = "Transfer-Encoding" in headers
        chunked = "Content-Length" not in headers and (has_te or body != b"")
        if chunked and not has_te:
            lines.append(b"Transfer-Encoding: chunked")
        head = b"\r\n".join(lines) + b"\r\n\r\n"
        if head.count(b"\r") != len(lines) + 1 or head.count(b"\n") != len(lines) + 1:
            raise httpx2.LocalProtocolError("CR or LF inside the request line or a header.")
        out = head  # sent with the first part of the body: one sendall for a body in memory
        try:
            for part in request.stream if body is None else (body,):
                if part:
                    out += b"%x\r\n%s\r\n" % (len(part), part) if chunked else part
                    self.sock.sendall(out)
                    out = b""
            if chunked or out:
                self.sock.sendall(out + b"0\r\n\r\n" if chunked else out)
        except OSError as exc:
            raise _mapped(exc, httpx2.WriteTimeout, httpx2.WriteError) from exc

    def read_response(self, method: str, timeout: float | None) -> tuple[RawResponse, bool]:
        """The response, fully read, and whether the connection can carry another request."""
        self.sock.settimeout(timeout)
        status = 100
        while status < 200:  # 1xx interim responses (100 Continue, 103 Early Hints): skipped
            head = self.read_until(b"\r\n\r\n", at_eof=_NO_RESPONSE)
            version, status, reason, headers = _parse_head(head)
        chunked, length, options = _framing(headers)
        # HTTP/1.1 is persistent unless it says close; HTTP/1.0 only if it says keep-alive.
        reusable = b"close" not in options if version == b"HTTP/1.1" else b"keep-alive" in options
        if method == "HEAD" or status in (204, 304):
            body = b""
        elif chunked:
            body = self.read_chunked()
        elif length is not None:
            body = self.read_exact(length)
        else:  # delimited by the end of the connection
            while self.fill():
                pass
            body, reusable = self.read_exact(len(self.buffer)), False
        return RawResponse(status, reason, headers, body, version), reusable and not self.buffer


class RawResponse(NamedTuple):
    """A response as it came, its body still encoded (see `KeepAliveTransport.exchange`)."""

    status: int
    reason: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes
    http_version: bytes

    def to_httpx(self, request: httpx2.Request | None = None) -> httpx2.Response:
        """As an `httpx2.Response`, which decodes the body's Content-Encoding when read."""
        return httpx2.Response(
            self.status,
            headers=self.headers,
            stream=httpx2.ByteStream(self.body),
            extensions={"http_version": self.http_version, "reason_phrase": self.reason},
            request=request,
        )


class KeepAliveTransport(httpx2.BaseTransport):
    """HTTP/1.1 over pooled keep-alive connections, for `httpx2.Client(transport=...)`.

    `verify` is as httpx2's. At most `max_keepalive` idle connections are kept (over all hosts),
    each for at most `keepalive_expiry` seconds. Response bodies are not streamed. Thread-safe.
    """

    def __init__(
        self,
        *,
        verify: ssl.SSLContext | bool = True,
        max_keepalive: int = 100,
        keepalive_expiry: float = 4.0,
    ) -> None:
        self._verify = verify
        self._ssl_context: ssl.SSLContext | None = None  # built on the first https connection
        self._max_keepalive = max_keepalive
        self._keepalive_expiry = keepalive_expiry
        self._idle: dict[_Key, list[_Connection]] = {}  # oldest first
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            raw = self._roundtrip(
                request.url,
                request.method,
                request.extensions.get("timeout", {}),
                lambda conn, timeout: conn.send_request(request, timeout),
            )
        except httpx2.TransportError as exc:
            exc.request = request
            raise
        return raw.to_httpx()

    def exchange(self, url: httpx2.URL, data: bytes, timeouts: dict, method: str = "POST"):
        """Send `data`, a whole request already serialized (request line, headers with the
        Host and Content-Length, blank line, body), to `url`'s server; return its response as
        a `RawResponse`. For a caller that sends the same request shape many times (the judge
        client) and so need not build an `httpx2.Request` and `Response` per request. Errors
        are httpx2's, without a request attached."""

        def send(conn: _Connection, timeout: float | None) -> None:
            conn.sock.settimeout(timeout)
            try:
                conn.sock.sendall(data)
            except OSError as exc:
                raise _mapped(exc, httpx2.WriteTimeout, httpx2.WriteError) from exc

        return self._roundtrip(url, method, timeouts, send)

    def _roundtrip(self, url: httpx2.URL, method: str, timeouts: dict, send) -> RawResponse:
        scheme = url.scheme
        if scheme not in _DEFAULT_PORTS:
            raise httpx2.UnsupportedProtocol(f"Unsupported URL scheme {scheme!r}.")
        key = (scheme, url.raw_host.decode("ascii"), url.port or _DEFAULT_PORTS[scheme])
        conn = None
        try:
            conn = self._checkout(key) or self._connect(key, timeouts.get("connect"))
            try:
                send(conn, timeouts.get("write"))
            except httpx2.WriteError as unsent:
                # A server may answer before it has read the whole body (a 401, a 413) and
                # close: that answer is the outcome, not the broken pipe.
                try:
                    response, _ = conn.read_response(method, timeouts.get("read"))
                except httpx2.TransportError:
                    raise unsent from None
                conn.sock.close()
                return response
            response, reusable = conn.read_response(method, timeouts.get("read"))
        except BaseException:
            if conn is not None:
                conn.sock.close()
            raise
        if reusable:
            conn.idle_since = time.monotonic()
            with self._lock:
                if sum(map(len, self._idle.values())) < self._max_keepalive:
                    self._idle.setdefault(key, []).append(conn)
                    return response
        conn.sock.close()
        return response

    def close(self) -> None:
        """Close the idle connections (in a forked child, only this process's descriptors)."""
        with self._lock:
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.sock.close()

    def _connect(self, key: _Key, timeout: float | None) -> _Connection:
        scheme, host, port = key
        sock = None
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if scheme == "https":
                if self._ssl_context is None:  # a race builds it twice, harmlessly
                    context = httpx2.create_ssl_context(self._verify)
                    context.set_alpn_protocols(["http/1.1"])
                    self._ssl_context = context
                sock = self._ssl_context.wrap_socket(sock, server_hostname=host)
        except OSError as exc:  # ssl.SSLError (certificate checks too) is an OSError
            if sock is not None:
                sock.close()
            raise _mapped(exc, httpx2.ConnectTimeout, httpx2.ConnectError) from exc
        return _Connection(sock)

    def _checkout(self, key: _Key) -> _Connection | None:
        """A usable idle connection to `key`, or None; expired ones are closed on the way."""
        if self._pid != os.getpid():  # a forked child: the idle sockets are the parent's too
            self._lock = threading.Lock()  # the parent's may have been held at the fork
            self._pid = os.getpid()
            self.close()
        while True:
            with self._lock:
                idle = self._idle.get(key, [])
                cutoff = time.monotonic() - self._keepalive_expiry
                expired = next((i for i, c in enumerate(idle) if c.idle_since >= cutoff), len(idle))
                stale, idle[:expired] = idle[:expired], []
                conn = idle.pop() if idle else None  # the newest: the least likely closed
            for old in stale:
                old.sock.close()
            if conn is None:
                return None
            if not _readable(conn.sock):  # readable while idle: closed by the server, or junk
                return conn
            conn.sock.close()
