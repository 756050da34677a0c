"""gunicorn's settings for a Sherlock deployment (docs/deploy.md): `gunicorn -c
deploy/gunicorn.conf.py sherlock.wsgi`, behind a reverse proxy that serves /static/.

Threaded workers (`gthread`): each process answers several requests at once and keeps
connections alive, so a burst of clients waits in the listen backlog instead of being reset;
a request that runs past `timeout` is ended with its worker, which gunicorn replaces. Every
figure can be set from the environment, named beside it.
"""

import os

bind = os.environ.get("SHERLOCK_BIND", "127.0.0.1:8000")
# About one process per core of the web machine, each with a few threads: Sherlock's requests
# wait on the database more than they compute.
workers = int(os.environ.get("WEB_CONCURRENCY", os.cpu_count() or 2))
worker_class = "gthread"
threads = int(os.environ.get("SHERLOCK_WEB_THREADS", 4))
# Connections waiting for a worker: a burst of 50 CI clients queues here rather than failing.
backlog = int(os.environ.get("SHERLOCK_WEB_BACKLOG", 2048))
timeout = int(os.environ.get("SHERLOCK_WEB_TIMEOUT", 60))
graceful_timeout = 30
keepalive = 5
# A worker is replaced after this many requests (a slow leak never grows for ever).
max_requests = 2000
max_requests_jitter = 200
# The proxy in front says who the client was and over which scheme (docs/deploy.md).
forwarded_allow_ips = os.environ.get("SHERLOCK_PROXY_IPS", "127.0.0.1")
accesslog = os.environ.get("SHERLOCK_ACCESS_LOG", "-")
errorlog = "-"
