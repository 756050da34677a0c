"""Every reference a reader meets resolves: the code, templates and docs cite no document that is
not in the repository (design notes, a style guide, seeds, issue numbers), and every
`docs/<name>.md` they name, and every link between the docs, points at a file that exists, and
every section the code names beside its page is a heading of that page."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEXT = (".py", ".html", ".md", ".js", ".toml", ".yml", ".txt", ".cfg", ".css")
# What a clone does not hold: the design notes, the style guide, the seeds, the issue tracker.
# Spelled in pieces, so that this pattern is not itself a line that cites them.
_NOTES, _GUIDE, _SEED, _ISSUE = "DES" + "IGN", "STY" + "LE", "se" + "ed", "is" + "sue"
OUTSIDE = re.compile(
    rf"\b{_NOTES}\b|{_GUIDE}\.md|\b{_GUIDE} (?:item|\d)"
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


# Code named in prose: `app.module.name` in backticks, and `app/path/module.py`.
APPS = ("agents", "evaluations", "governance", "production", "sherlock")
_APP = "|".join(APPS)
DOTTED = re.compile(rf"`+((?:{_APP})(?:\.\w+)+)`+")
PATH = re.compile(rf"(?<![\w/.])((?:{_APP})/[\w/]*\w\.py)\b")
PERMISSION = re.compile(r"(view|add|change|delete|edit|build|publish)_\w+")
# What `sherlock.` also starts: the span and resource attributes Sherlock reads (not modules).
SHERLOCK_MODULES = ("core", "settings", "urls", "api_urls", "wsgi", "asgi")


def _module_file(parts):
    base = ROOT.joinpath(*parts)
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def _defines(path, name):
    pattern = (
        rf"^\s*(?:async def|def|class) {name}\b|^\s*{name}\s*[:=]|^\s+{name},$"
        rf"|^(?:from \S+ )?import .*\b{name}\b"
    )
    return re.search(pattern, path.read_text(encoding="utf-8"), re.M) is not None


def _names_that_are_no_module():
    """Dotted words that name no code: audit codes and their prefixes, webhook events, model
    labels, permissions, migrations."""
    from governance.choices import WebhookEvent
    from tests.test_audit_codes import VOCABULARY

    codes = set(VOCABULARY)
    nouns = {code.rsplit(".", 1)[0] for code in codes}
    return codes | nouns | {event.value for event in WebhookEvent}, nouns


def _resolves(token, known, nouns):
    parts = token.split(".")
    if token in known or (len(parts) == 3 and ".".join(parts[:2]) in nouns):
        return True  # an audit code, written or built from its noun and verb
    if parts[0] == "sherlock" and parts[1] not in SHERLOCK_MODULES:
        return True  # a span or resource attribute
    if parts[1][:1].isupper() or parts[1][:1].isdigit():
        return True  # a model label (`governance.AuditEntry`, its field) or a migration
    if len(parts) == 3 and parts[2] == "refused" and parts[1] in _model_names(parts[0]):
        return True  # the refusal of a verb on a hidden row (`<app>.<model>.refused`)
    if len(parts) == 2 and re.fullmatch(
        r"(view|add|change|delete|edit|build|publish)_\w+", parts[1]
    ):
        return True  # a permission (`evaluations.edit_dataset`)
    for end in range(len(parts), 0, -1):
        path = _module_file(parts[:end])
        if path is not None:
            rest = parts[end:]
            return not rest or _defines(path, rest[0])
    return False


def _model_names(app):
    from django.apps import apps

    return {model._meta.model_name for model in apps.get_app_config(app).get_models()}


def test_every_module_and_name_cited_exists():
    """A module moved or a function renamed leaves no reader following a dead name."""
    known, nouns = _names_that_are_no_module()
    dead = []
    for path, number, line in lines():
        if "migrations" in path.parts or path.suffix not in (".py", ".md", ".html"):
            continue
        where = f"{path.relative_to(ROOT)}:{number}"
        dead += [f"{where}: {t}" for t in DOTTED.findall(line) if not _resolves(t, known, nouns)]
        dead += [f"{where}: {p}" for p in PATH.findall(line) if not (ROOT / p).is_file()]
    assert dead == []


# A section named beside its page: `docs/contract.md, "Stored runs, imported trials and the
# decision"` (the words may run onto the next line, and `and "..."` names a second one).
SECTION = re.compile(r'docs/([\w./-]+?\.md),?\s+"([^"#{]+)"((?:\s+and\s+"[^"#{]+")*)')
HEADING = re.compile(r"^#+\s+(.*)$", re.MULTILINE)


def _headings(name):
    text = (ROOT / "docs" / name).read_text(encoding="utf-8")
    return [heading.replace("`", "") for heading in HEADING.findall(text)]


def test_every_section_named_in_the_code_exists():
    """A heading is named by its words, or by the words it starts with ("Limits" for "Limits:
    one reader for every path"); migrations keep the words of their day."""
    missing = []
    for path in tracked():
        if path.suffix not in (".py", ".html") or "migrations" in path.parts:
            continue
        for match in SECTION.finditer(path.read_text(encoding="utf-8")):
            name = match.group(1)
            named = [match.group(2), *re.findall(r'"([^"#]+)"', match.group(3))]
            if not (ROOT / "docs" / name).is_file():
                continue  # said by test_every_doc_named_exists
            headings = _headings(name)
            for section in named:
                words = " ".join(section.replace("`", "").split())
                if not any(heading.startswith(words) for heading in headings):
                    missing.append(f"{path.relative_to(ROOT)}: docs/{name}, {words!r}")
    assert missing == []
