# Sherlock: `make run` sets everything up and serves it; `make test` sets up and runs the suite.
# Needs only Python 3.11 on the PATH (as python3.11 or python3).

PYTHON_SYS ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
# What serving needs (requirements.txt), and the development set on top (requirements-dev.txt:
# the test tools, browser driver, type checker, instrumentations): `make run` installs only the
# first, so a new machine downloads what serving needs before its first page.
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
ADDR ?= 127.0.0.1:8000
# `make test` runs the suite on one worker per core (pytest-xdist), each test module whole on
# one worker with its own test database, live server port and browser; TEST_WORKERS=0 runs it
# in one process.
TEST_WORKERS ?= auto

.PHONY: run test lint format schema bench real-judge clean

$(STAMP): requirements.txt
	test -x $(PY) || $(PYTHON_SYS) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

$(DEV_STAMP): $(STAMP) requirements-dev.txt
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(DEV_STAMP)

# The demo signs its releases with a local key made on first run (docs/attestations.md); set
# SHERLOCK_ATTESTATION_KEY_FILE to use your own, or SHERLOCK_ATTESTATIONS=false to sign nothing.
DEMO_KEY := .run/attestation-key.pem
run: export SHERLOCK_ATTESTATION_KEY_FILE ?= $(CURDIR)/$(DEMO_KEY)

run: $(STAMP)
	mkdir -p .run
	SHERLOCK_ATTESTATIONS=false $(PY) manage.py attestation_keys create --file $(DEMO_KEY) --if-missing
	$(PY) manage.py migrate --noinput --verbosity 0
	$(PY) manage.py seed_demo
	$(PY) manage.py serve $(ADDR)

test: $(DEV_STAMP)
	$(PY) -m pytest $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile) $(PYTEST_ARGS)

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) manage.py makemigrations --check --dry-run
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

format: $(DEV_STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

schema: $(DEV_STAMP)
	$(PY) manage.py spectacular --validate --fail-on-warn --file openapi.yaml

# Opt-in, not part of `test`: llama.cpp's server and a small model from PyPI on loopback, every
# model check kind and the openai_chat adapter against it (bench/real_judge.sh, docs/judges.md).
real-judge: $(DEV_STAMP)
	PYTHON=$(PY) bench/real_judge.sh $(REAL_JUDGE_ARGS)

clean:
	rm -rf $(VENV) db.sqlite3* test-db.sqlite3* .pytest_cache
