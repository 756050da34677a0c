"""A reverse proxy on loopback in front of a real Sherlock that misbehaves for a while: it
answers the first requests with the statuses it is given (429 with a Retry-After, 503), then
forwards every request to the server as it came and its answer back as it went. What a rate
limiter or a restarting load balancer does to a CI job."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2 as httpx

# The Host is kept: the links the server writes (`next`, the run's URL) then lead back here.
HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"}


class FlakyProxy:
    """`with FlakyProxy(upstream, faults=[(429, {"Retry-After": "1"}), (503, {})]) as p:`;
    `p.url`; `p.refused` counts the faults answered, `p.forwarded` the requests passed on.
    After the first faults, `every` > 0 refuses every `every`-th request with a 503, `later`
    times, so the calls of the middle of a run (uploads, polls) meet them too."""

    def __init__(
        self, upstream: str, faults: list[tuple[int, dict]], *, every: int = 0, later: int = 0
    ):
        self.upstream = upstream.rstrip("/")
        self.faults = list(faults)
        self.every = every
        self.later = later
        self.seen = 0
        self.refused = 0
        self.forwarded = 0
        self.lock = threading.Lock()
        self.http = httpx.Client(timeout=60)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with proxy.lock:
                    proxy.seen += 1
                    fault = proxy.faults.pop(0) if proxy.faults else None
                    if not fault and proxy.later and proxy.seen % proxy.every == 0:
                        proxy.later -= 1
                        fault = (503, {})
                    if fault:
                        proxy.refused += 1
                    else:
                        proxy.forwarded += 1
                if fault:
                    status, headers = fault
                    data = b'{"detail": "try again later", "code": "throttled"}'
                    self.send_response(status)
                    for name, value in {**headers, "Content-Type": "application/json"}.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
                answer = proxy.http.request(
                    self.command, proxy.upstream + self.path, headers=headers, content=body
                )
                data = answer.content
                self.send_response(answer.status_code)
                for name, value in answer.headers.items():
                    if name.lower() not in HOP:
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_DELETE = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> FlakyProxy:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.http.close()
