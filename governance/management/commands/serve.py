"""`manage.py serve`: the web server and a django-q2 worker together, as `make run` starts them.

Both run as child processes, each in a process group of its own; Ctrl-C (SIGINT) or SIGTERM
stops both groups, and if either exits the other is stopped too (and `serve` exits 1 naming
which), so a half-running Sherlock is never left behind. An address it cannot listen on (a port
taken) is one line and exit 1, before any worker starts. For a deployment, see docs/deploy.md.

The web server is Django's `runserver` serving the static files itself (`--insecure`), with two
changes: a path that climbs out of the static directories (`/static/../..`) is a 404, where
Django's handler lets the finder's `SuspiciousFileOperation` through as a 500; and a request
whose declared body is over the limit (`SHERLOCK_API_MAX_BODY_BYTES`) is answered (413, by the
view, which reads none of it) and its connection closed, where Django's server reads the whole
body after answering so as to keep the connection: no body over the limit is ever read.
"""

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any, cast
from wsgiref import simple_server

from django.conf import settings
from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.contrib.staticfiles.management.commands.runserver import Command as RunServer
from django.core.exceptions import SuspiciousFileOperation
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.core.servers.basehttp import ServerHandler, WSGIRequestHandler, WSGIServer
from django.http import Http404


class StaticFiles(StaticFilesHandler):
    """Django's development static handler, with a traversal answered as not found."""

    def serve(self, request):
        try:
            return super().serve(request)
        except SuspiciousFileOperation:
            raise Http404("no such static file") from None


class BoundedServerHandler(ServerHandler):
    """Django's development `ServerHandler`, which reads what the application left unread of
    the body once it has answered (to keep the connection alive), except when the declared
    body is over the limit: that connection is closed instead, unread."""

    request_handler: Any  # the request handler that runs it, set there
    environ: dict[str, Any]  # set by the base's run()

    def close(self):
        try:
            declared = int(self.environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > settings.SHERLOCK_API_MAX_BODY_BYTES:
            self.request_handler.close_connection = True
            simple_server.ServerHandler.close(self)  # the base's close, without the read
            return
        super().close()


class BoundedRequestHandler(WSGIRequestHandler):
    def handle_one_request(self):
        """Django's own (`WSGIRequestHandler.handle_one_request`), with `BoundedServerHandler`."""
        self.raw_requestline = self.rfile.readline(65537)
        if len(self.raw_requestline) > 65536:
            self.requestline = self.request_version = self.command = ""
            self.send_error(414)
            return
        if not self.parse_request():
            return
        handler = BoundedServerHandler(
            self.rfile, self.wfile, self.get_stderr(), self.get_environ()
        )
        handler.request_handler = self
        handler.run(cast(WSGIServer, self.server).get_app())  # type: ignore[arg-type]  # set at start


class BoundedServer(WSGIServer):
    """Django's development server, its requests handled by `BoundedRequestHandler`."""

    def __init__(self, server_address, handler_class, *args, **kwargs):
        super().__init__(server_address, BoundedRequestHandler, *args, **kwargs)


class WebServer(RunServer):
    """`runserver` with `StaticFiles` as its static handler, on `BoundedServer`."""

    server_cls = BoundedServer

    def get_handler(self, *args, **options):
        handler = super().get_handler(*args, **options)
        if isinstance(handler, StaticFilesHandler):
            return StaticFiles(handler.application)
        return handler


class Command(BaseCommand):
    help = "Serve Sherlock (runserver) and a django-q2 worker (qcluster) until Ctrl-C."

    def add_arguments(self, parser):
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument(
            "--web-only",
            action="store_true",
            help="Only the web server, without a worker (what `serve` starts as its child).",
        )

    def handle(self, *args, addrport, web_only=False, **options):
        if web_only:
            # insecure_serving: serve static files (admin CSS, htmx) although DEBUG is off.
            call_command(WebServer(), addrport, use_reloader=False, insecure_serving=True)
            return
        check_bindable(addrport)  # one line and exit 1, before any worker starts
        python = sys.executable
        manage = sys.argv[0]
        children = [
            _start([python, manage, "qcluster"]),
            _start([python, manage, "serve", "--web-only", addrport]),
        ]
        self.stdout.write(
            f"Sherlock is at http://{addrport}/runs/ (admin: /admin/, API docs: /api/docs/). "
            "Ctrl-C stops the server and the worker."
        )
        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        while not stopping and all(child.poll() is None for child in children):
            time.sleep(0.3)
        ended = [child for child in children if child.poll() not in (None, 0)]
        for child in children:
            _signal_group(child, signal.SIGTERM)
        for child in children:
            try:
                child.wait(timeout=15)
            except subprocess.TimeoutExpired:
                _signal_group(child, signal.SIGKILL)
                child.wait()
        if ended and not stopping:
            names = {children[0].pid: "the worker", children[1].pid: "the web server"}
            child = ended[0]
            raise CommandError(f"{names[child.pid]} stopped (exit {child.returncode})")
        self.stdout.write("Stopped.")


def check_bindable(addrport):
    """CommandError, one line, when `addrport` cannot be listened on (taken, or not this
    machine's): `serve` exits 1 before it starts a worker that nothing would stop."""
    host, _, port = addrport.rpartition(":")
    host = (host or "127.0.0.1").strip("[]")
    try:
        number = int(port)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, number))
    except (OSError, ValueError, OverflowError) as exc:
        why = getattr(exc, "strerror", None) or str(exc)
        raise CommandError(f"cannot serve on {addrport}: {why}") from None


def _start(command):
    """A child in a process group of its own (a worker's own processes included), which the
    kernel stops if `serve` itself dies (Linux's parent-death signal), so no worker is ever
    left running without its server."""
    return subprocess.Popen(command, start_new_session=True, preexec_fn=_die_with_parent)


def _die_with_parent():
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _signal_group(child, signum):
    """`signum` to every process of `child`'s group (the qcluster's sentinel and workers too)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signum)
