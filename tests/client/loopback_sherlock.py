"""A small Sherlock on loopback for the client's own tests: the client-run API of
docs/client.md (ensure a version, a client run, its work list, uploads, finish, the verdict,
publication) answered over real HTTP from memory, with faults on demand (429 with Retry-After,
503, a dropped connection). It exercises the client's HTTP, retries, pagination, batching and
outputs without the Django server; the tests against the real server are test_live_*.py.

The verdict it answers is its own small rule (a case passes when its output contains "ok",
an error item makes the run incomplete): the client must report what the server says, so the
rule only needs to be simple and known to the tests.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

PAGE = 7  # small, so every list is paginated


class State:
    def __init__(self, cases=5, key="good-key"):
        self.lock = threading.Lock()
        self.key = key
        self.cases = [
            {"id": 100 + i, "key": f"case-{i}", "input": {"question": f"q{i}"}}
            for i in range(cases)
        ]
        self.versions = {}  # (agent, name) -> version
        self.runs = {}
        self.uploads = []  # every batch as received
        self.faults = []  # a list of (status, headers) answered before any real answer
        self.drop = 0  # connections closed without an answer
        self.requests = []
        self.published = {}  # version id -> publication


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: State

    def log_message(self, *args):
        pass

    def _send(self, status, body=None, headers=None):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status, detail, code, field=None):
        body = {"detail": detail, "code": code}
        if field:
            body["field"] = field
        self._send(status, body)

    def _page(self, items, query):
        page = int(query.get("page", ["1"])[0])
        chunk = items[(page - 1) * PAGE : page * PAGE]
        base = f"http://{self.headers['Host']}{urlsplit(self.path).path}"
        rest = {k: v[0] for k, v in query.items() if k != "page"}
        following = None
        if page * PAGE < len(items):
            following = (
                base + "?" + "&".join([*(f"{k}={v}" for k, v in rest.items()), f"page={page + 1}"])
            )
        return {"count": len(items), "next": following, "previous": None, "results": chunk}

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def _handle(self, method):
        s = self.state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        with s.lock:
            s.requests.append((method, self.path))
            if s.drop:
                s.drop -= 1
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if s.faults:
                status, headers = s.faults.pop(0)
                return self._send(status, {"detail": "try again", "code": "throttled"}, headers)
            if self.headers.get("Authorization") != f"Token {s.key}":
                return self._error(401, "Invalid token.", "not_authenticated")
            body = json.loads(raw) if raw else {}
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            return self._route(method, parts.path.removeprefix("/api/v1/"), body, query)

    def _route(self, method, path, body, query):  # noqa: C901
        s = self.state
        if method == "POST" and path == "versions/ensure/":
            key = (body["agent"], body["name"])
            if body["agent"] != "bot":
                return self._error(404, "no agent", "not_found", "agent")
            found = s.versions.get(key)
            if found and found["config"] != body["config"]:
                return self._error(409, "config differs", "conflict", "config")
            if not found:
                found = s.versions[key] = {
                    "id": len(s.versions) + 1,
                    "agent": "bot",
                    "name": body["name"],
                    "number": len(s.versions) + 1,
                    "adapter": "client",
                    "config": body["config"],
                }
                return self._send(201, found)
            return self._send(200, found)
        if method == "GET" and path == "versions/":
            return self._send(200, self._page(list(s.versions.values()), query))
        if method == "GET" and path == "datasets/":
            found = [{"id": 3, "slug": "ds"}] if query.get("slug", ["ds"])[0] == "ds" else []
            return self._send(200, self._page(found, query))
        if method == "GET" and path == "dataset-versions/":
            frozen = {"id": 9, "number": 1, "frozen_at": "2026-12-01T00:00:00Z"}
            return self._send(200, self._page([frozen], query))
        if method == "GET" and path == "agents/":
            return self._send(
                200, self._page([{"id": 1, "slug": "bot", "live_version": None}], query)
            )
        if method == "POST" and path == "runs/client/":
            if body["dataset"] != "ds":
                return self._error(400, "dataset: no dataset 'x'", "does_not_exist", "dataset")
            if body.get("purpose") == "gate":
                return self._error(409, "No waiting gate run", "no_gate_run")
            run_id = len(s.runs) + 1
            run = {
                "id": run_id,
                "url": f"http://{self.headers['Host']}/runs/{run_id}/",
                "status": "waiting",
                "dataset_version": 9,
                "repetitions": body["repetitions"],
                "agent": body["agent"],
                "version": body["version"],
                "dataset": "ds",
                "metadata": body.get("metadata"),
                "stored": {},
            }
            s.runs[run_id] = run
            return self._send(201, {k: v for k, v in run.items() if k != "stored"})
        match = re.fullmatch(r"runs/(\d+)/(work|transcripts|finish|verdict)?/?", path)
        if match:
            run = s.runs.get(int(match.group(1)))
            if run is None:
                return self._error(404, "Not found.", "not_found")
            return getattr(self, f"_run_{match.group(2) or 'detail'}")(run, body, query)
        if method == "GET" and path == "trials/":
            run = s.runs[int(query["run"][0])]
            trials = [
                {
                    "case": key.split("|")[0],
                    "repetition": int(key.split("|")[1]),
                    "status": "error" if "error" in item else "completed",
                    "error": item.get("error", {}).get("message", ""),
                }
                for key, item in sorted(self._keyed(run).items())
            ]
            return self._send(200, self._page(trials, query))
        if method == "GET" and path == "case-results/":
            run = s.runs[int(query["run"][0])]
            outcomes = {}
            for key, item in self._keyed(run).items():
                case = key.split("|")[0]
                ok = "ok" in str(item.get("transcript", {}).get("output"))
                outcomes[case] = outcomes.get(case, True) and ok
            rows = [{"case": c, "passed": p, "flaky": False} for c, p in sorted(outcomes.items())]
            return self._send(200, self._page(rows, query))
        match = re.fullmatch(r"versions/(\d+)/publication/", path)
        if match:
            return self._send(
                200,
                s.published.get(
                    int(match.group(1)),
                    {
                        "published": False,
                        "state": "draft",
                        "published_at": None,
                        "published_by": None,
                        "decision": None,
                        "bypass": None,
                    },
                ),
            )
        return self._error(404, f"no route {path}", "not_found")

    def _keyed(self, run):
        by_key = {
            f"{c['id']}:{r}": c for c in self.state.cases for r in range(1, run["repetitions"] + 1)
        }
        return {f"{by_key[k]['key']}|{k.split(':')[1]}": v for k, v in run["stored"].items()}

    def _work_items(self, run):
        return [
            {
                "key": f"{c['id']}:{r}",
                "case": c["key"],
                "case_version": c["id"],
                "repetition": r,
                "input": c["input"],
                "context": {"contexts": [], "tools": []},
            }
            for c in self.state.cases
            for r in range(1, run["repetitions"] + 1)
        ]

    def _run_detail(self, run, body, query):
        return self._send(200, {k: v for k, v in run.items() if k != "stored"})

    def _run_work(self, run, body, query):
        items = self._work_items(run)
        if "all" not in query:
            items = [i for i in items if i["key"] not in run["stored"]]
        return self._send(200, self._page(items, query))

    def _run_transcripts(self, run, body, query):
        if run["status"] != "waiting":
            return self._error(409, "run finished", "conflict")
        items = body["items"]
        known = {i["key"] for i in self._work_items(run)}
        for index, item in enumerate(items):
            if item["key"] not in known:
                return self._error(400, "unknown key", "invalid", f"items[{index}].key")
            output = item.get("transcript", {}).get("output")
            if "transcript" in item and output == "refuse me":
                return self._error(
                    400, "output refused", "invalid", f"items[{index}].transcript.output"
                )
        self.state.uploads.append(items)
        accepted = duplicates = 0
        for item in items:
            if item["key"] in run["stored"]:
                duplicates += 1
            else:
                run["stored"][item["key"]] = item
                accepted += 1
        remaining = len(known) - len(run["stored"])
        return self._send(
            200, {"accepted": accepted, "duplicates": duplicates, "remaining": remaining}
        )

    def _run_finish(self, run, body, query):
        if run["status"] == "waiting":
            for item in self._work_items(run):
                run["stored"].setdefault(
                    item["key"],
                    {
                        "key": item["key"],
                        "error": {"kind": "missing", "message": "never returned by the client"},
                    },
                )
            run["status"] = "completed"
            return self._send(202, {"id": run["id"], "status": "finishing"})
        return self._send(200, {"id": run["id"], "status": run["status"]})

    def _run_verdict(self, run, body, query):
        stored = list(run["stored"].values())
        errored = sum("error" in i for i in stored)
        failed = sum(
            "transcript" in i and "ok" not in str(i["transcript"].get("output")) for i in stored
        )
        if run["status"] != "completed":
            outcome, code = "pending", None
        elif errored:
            outcome, code = "incomplete", 2
        elif failed:
            outcome, code = "failed", 1
        else:
            outcome, code = "passed", 0
        return self._send(
            200,
            {
                "run": run["id"],
                "url": run["url"],
                "status": run["status"],
                "outcome": outcome,
                "exit_code": code,
                "policy": None,
                "reasons": [{"code": outcome, "detail": f"{errored} errored, {failed} failed"}],
                "gates": [
                    {
                        "name": "case_pass_rate",
                        "state": "passed" if not failed else "failed",
                        "value": 1.0,
                        "bound": 1.0,
                        "detail": "",
                    }
                ],
                "cases": {
                    "total": len(self.state.cases),
                    "passed": 0,
                    "failed": failed,
                    "errored": errored,
                    "unscored": 0,
                },
                "missing": [],
            },
        )


class LoopbackSherlock:
    """`with LoopbackSherlock() as server:` -> `server.url`, `server.state`."""

    def __init__(self, **state):
        self.state = State(**state)
        handler = type("BoundHandler", (Handler,), {"state": self.state})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
