"""The deployment a team copies (docs/deploy.md) holds together: compose runs the web server
with the gunicorn settings the load test uses, a worker, PostgreSQL and Redis, and the proxy in
front reaches the web service and serves the collected static files."""

from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"


def test_compose_runs_every_part_on_the_tested_settings():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    assert {"db", "redis", "migrate", "web", "worker", "proxy"} <= set(services)
    assert services["web"]["command"] == [
        "gunicorn",
        "-c",
        "deploy/gunicorn.conf.py",
        "sherlock.wsgi",
    ]
    assert services["worker"]["command"] == ["python", "manage.py", "qcluster"]
    assert services["web"]["environment"]["DATABASE_URL"].startswith("postgres://")
    assert services["web"]["environment"]["REDIS_URL"].startswith("redis://")
    assert services["web"]["environment"]["SHERLOCK_BIND"] == "0.0.0.0:8000"
    assert services["web"]["depends_on"]["migrate"]["condition"] == (
        "service_completed_successfully"
    )


def test_the_proxy_reaches_the_web_service_and_serves_static_files():
    nginx = (DEPLOY / "nginx.conf").read_text()
    assert "proxy_pass http://web:8000;" in nginx
    assert "alias /srv/static/;" in nginx
    assert "X-Forwarded-Proto" in nginx


def test_the_image_installs_what_serving_needs_only():
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "requirements.txt" in dockerfile and "requirements-dev" not in dockerfile
