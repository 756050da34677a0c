"""Every reference a reader meets resolves: the code, templates and docs cite no document that is
not in the repository (design notes, a style guide, seeds, issue numbers), and every
`docs/<name>.md` they name, and every link between the docs, points at a file that exists."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEXT = (".py", ".html", ".md", ".js", ".toml", ".yml", ".txt", ".cfg", ".css")
# What a clone does not hold: the design notes, the style guide, the seeds, the issue tracker.
# Spelled in pieces, so that this pattern is not itself a line that cites them.
_NOTES, _GUIDE, _SEED, _ISSUE = "DES" + "IGN", "STY" + "LE", "se" + "ed", "is" + "sue"
OUTSIDE = re.compile(
    rf"\b{_NOTES}\b|{_GUIDE}\.md|\b{_GUIDE} item"
    rf"|(?i:\b{_SEED}s? 0\d\d\b|\bthe {_SEED}s'|\b{_ISSUE}s? \d+\b)"
)
DOC = re.compile(r"\bdocs/([\w./-]+?\.md)\b")
LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")


def tracked():
    names = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    for name in names:
        path = ROOT / name
        if (path.suffix in TEXT or path.name in ("Makefile", "run")) and path.is_file():
            yield path


def lines():
    for path in tracked():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            yield path, number, line


def test_nothing_cites_what_the_repository_does_not_hold():
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}"
        for path, number, line in lines()
        if path.name != "test_references.py"
        and OUTSIDE.search(line)
        and " not in " not in line  # a test asserting a page does not show such a word
    ]
    assert found == []


def test_every_doc_named_exists():
    missing = [
        f"{path.relative_to(ROOT)}:{number}: docs/{name}"
        for path, number, line in lines()
        for name in DOC.findall(line)
        if not (ROOT / "docs" / name).is_file()
    ]
    assert missing == []


def test_every_link_between_docs_resolves():
    missing = []
    for path in (ROOT / "docs").rglob("*.md"):
        for target in LINK.findall(path.read_text(encoding="utf-8")):
            if "://" not in target and not (path.parent / target).resolve().is_file():
                missing.append(f"{path.relative_to(ROOT)} -> {target}")
    assert missing == []
