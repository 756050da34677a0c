"""`manage.py serve`: the web server and a django-q2 worker together, as `make run` starts them.

Both run as child processes; Ctrl-C (SIGINT) or SIGTERM stops both, and if either exits the
other is stopped too, so a half-running Sherlock is never left behind.
"""

import signal
import subprocess
import sys
import time

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Serve Sherlock (runserver) and a django-q2 worker (qcluster) until Ctrl-C."

    def add_arguments(self, parser):
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")

    def handle(self, *args, addrport, **options):
        python = sys.executable
        manage = sys.argv[0]
        children = [
            subprocess.Popen([python, manage, "qcluster"]),
            # --insecure: serve static files (admin CSS, htmx) although DEBUG is off.
            subprocess.Popen([python, manage, "runserver", "--noreload", "--insecure", addrport]),
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
