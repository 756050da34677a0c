"""`manage.py serve`: the web server and a django-q2 worker together, as `make run` starts them.

Both run as child processes; Ctrl-C (SIGINT) or SIGTERM stops both, and if either exits the
other is stopped too, so a half-running Sherlock is never left behind.

The web server is Django's `runserver` serving the static files itself (`--insecure`), with one
change: a path that climbs out of the static directories (`/static/../..`) is a 404, where
Django's handler lets the finder's `SuspiciousFileOperation` through as a 500 (issue 22).
"""

import signal
import subprocess
import sys
import time

from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.contrib.staticfiles.management.commands.runserver import Command as RunServer
from django.core.exceptions import SuspiciousFileOperation
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.http import Http404


class StaticFiles(StaticFilesHandler):
    """Django's development static handler, with a traversal answered as not found."""

    def serve(self, request):
        try:
            return super().serve(request)
        except SuspiciousFileOperation:
            raise Http404("no such static file") from None


class WebServer(RunServer):
    """`runserver` with `StaticFiles` as its static handler."""

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
        python = sys.executable
        manage = sys.argv[0]
        children = [
            subprocess.Popen([python, manage, "qcluster"]),
            subprocess.Popen([python, manage, "serve", "--web-only", addrport]),
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
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for child in children:
            try:
                child.wait(timeout=15)
            except subprocess.TimeoutExpired:
                child.kill()
        self.stdout.write("Stopped.")
