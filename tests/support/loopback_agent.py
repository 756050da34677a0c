"""A tiny HTTP service on loopback playing an agent (or a tool) for the `http` adapter tests.

`answer(request)` gets `{"path", "headers", "body", "raw", "at", "n"}` (the JSON body, its
exact bytes, `time.monotonic()` on arrival, and its number from 1) and returns
`(status, json_body)` (bytes are sent as plain text), or sleeps first to play a slow service.
Every request is kept in `requests`. The webhook receiver (`loopback_webhook`) is the same
server with another answer.
"""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        pass

    def do_POST(self):
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        request = {
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": json.loads(raw or b"null"),
            "raw": raw,
            "at": time.monotonic(),
        }
        with owner.lock:
            owner.requests.append(request)
            request["n"] = len(owner.requests)
        status, answer = owner.answer(request)
        text = isinstance(answer, bytes)  # sent as it is, as plain text
        payload = answer if text else json.dumps(answer).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "text/plain" if text else "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout fired)


class LoopbackAgent:
    def __init__(self, answer=None):
        self.answer = answer or (lambda request: (200, {"output": "ok", "tool_calls": []}))
        self.requests = []
        self.lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self):
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._httpd.shutdown()
        self._httpd.server_close()
