"""`pip install ./client` in a fresh virtual environment, as a team would: the package
installs with only its declared dependencies (no Django), and its `sherlock` command runs.

The dependencies' wheels are fetched once with the ordinary `pip download` (PyPI, or the
machine's configured index); the install itself is `--no-index`, from those wheels only, so a
dependency the package forgot to declare fails here."""

import subprocess
import sys
import tomllib
import venv

import pytest

from tests.client.conftest import CLIENT


def test_the_client_installs_alone_and_its_command_runs(tmp_path):
    # What the package declares, as pip reads it: a dependency it imports but does not declare
    # is missing from the wheels, and fails below.
    declared = tomllib.loads((CLIENT / "pyproject.toml").read_text())
    wheels = tmp_path / "wheels"
    fetched = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--dest",
            str(wheels),
            *declared["project"]["dependencies"],
            *declared["build-system"]["requires"],
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if fetched.returncode != 0:
        pytest.skip(f"no package index reachable to fetch the wheels: {fetched.stderr[-300:]}")
    env_dir = tmp_path / "env"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    installed = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-index",
            "--find-links",
            str(wheels),
            str(CLIENT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr
    helped = subprocess.run(
        [str(env_dir / "bin" / "sherlock"), "run", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert helped.returncode == 0, helped.stderr
    assert "--resume RUN" in helped.stdout
    offline = subprocess.run(
        [str(env_dir / "bin" / "sherlock"), "verify", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert offline.returncode == 0 and "--attestation" in offline.stdout, offline.stderr
    alone = subprocess.run(
        [
            str(python),
            "-c",
            "import sherlock_client, importlib.util as u; print(u.find_spec('django') is None)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert alone.stdout.strip() == "True", alone.stderr
