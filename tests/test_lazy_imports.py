"""An import inside a function says why it is not at the top: the line above it (or above the
imports it is grouped with) is a comment naming the cycle, the app registry or the optional
library. `AppConfig.ready()` imports by Django's design and needs no comment. Anything else is
imported at the top, where `lint-imports` and a reader see it."""

import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("agents", "evaluations", "governance", "production", "sherlock")


def sources():
    names = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    for name in names:
        if name.split("/")[0] in PACKAGES and "/migrations/" not in name:
            yield ROOT / name


def unexplained(path):
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    found = []
    for function in ast.walk(ast.parse(text)):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if function.name == "ready":
            continue
        for node in ast.walk(function):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            above = node.lineno - 2
            while above >= 0 and lines[above].strip().startswith(("from ", "import ", ")")):
                above -= 1  # the imports grouped with it, and their closing parentheses
            while above >= 0 and lines[above].strip().startswith(("try:",)):
                above -= 1
            commented = above >= 0 and lines[above].strip().startswith("#")
            if not commented and "#" not in lines[node.lineno - 1]:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_every_import_inside_a_function_says_why():
    assert [spot for path in sources() for spot in unexplained(path)] == []
