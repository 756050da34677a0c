"""Docstrings say what and why in a few lines; the long explanations live in docs/, where a
person reads them, and the docstring names the page. Read from the source of every app, the
kernel and the client (migrations aside)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = (
    "sherlock",
    "agents",
    "evaluations",
    "governance",
    "production",
    "client/sherlock_client",
)
# A module's docstring is its map (its parts, what calls it): a little longer than a function's.
MODULE_LINES = 25
DEFINITION_LINES = 12


def docstrings():
    for source in SOURCES:
        for path in sorted((ROOT / source).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
                if not isinstance(node, kinds) or not node.body:
                    continue
                first = node.body[0]
                value = first.value if isinstance(first, ast.Expr) else None
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    name = getattr(node, "name", "the module")
                    lines = first.end_lineno - first.lineno + 1
                    limit = MODULE_LINES if isinstance(node, ast.Module) else DEFINITION_LINES
                    yield path.relative_to(ROOT), name, lines, limit


def test_every_docstring_is_a_few_lines():
    long = [
        f"{path}: {name} ({lines} > {limit})"
        for path, name, lines, limit in docstrings()
        if lines > limit
    ]
    assert not long, "move the explanation to docs/ and name the page:\n" + "\n".join(long)


def test_the_rule_reads_every_source():
    seen = {path.parts[0] for path, *_ in docstrings()}
    assert seen == {"sherlock", "agents", "evaluations", "governance", "production", "client"}
