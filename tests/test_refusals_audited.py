"""Every refused change is audited: a test that reads the source.

A refusal of a change is evidence ("a Builder tried to deactivate an Admin"), so it is written to
the audit log as `<app>.<noun>.refused`. Actions do that themselves (`execute()` and
`authorize()`, `sherlock.core.actions`); what this test finds is a refusal raised anywhere else:

- `ActionDenied` raised outside an action's method: allowed in a helper of an `actions` package
  only when every caller of the helper is in an `actions` package too (so it is raised through
  an action's `check()`, which audits it), or is listed in `HINTS` (a page asking why a form
  is read-only, changing nothing);
- `PermissionDenied` raised by a page, the admin or the API: allowed when the function asks the
  action's `authorize()` first (the refusal of a POST is then audited) or writes the entry
  itself (`audit(...)`), or when it is listed in `READS` with why nothing is changed there.

A new refusal that is none of these fails here until it audits or is listed with its reason.
"""

import ast
import importlib
from pathlib import Path

from sherlock.core.actions import Action

ROOT = Path(__file__).resolve().parent.parent
APPS = ("agents", "evaluations", "governance", "production", "sherlock")

# Refusals of reads: nothing is changed, so nothing is recorded (as a hidden object is a 404).
READS = {
    "governance/views/sign_in.py:admin_login": "the admin's sign-in page, a redirect (GET)",
}
# Pages that ask an action's helper to show why a form is read-only (a GET), not to refuse.
HINTS = {
    ("production/views/online.py", "check_may_write"): "the rule's page, read-only on GET",
}


def _sources():
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def _refusals():
    """(path, qualname, class name or None, exception name, node of the function) of every
    `raise ActionDenied` and `raise PermissionDenied` in the code."""
    found = []
    for path in _sources():
        tree = ast.parse(path.read_text(), str(path))

        def walk(node, stack, path=path):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    walk(child, [*stack, child], path)
                    continue
                if isinstance(child, ast.Raise) and child.exc is not None:
                    target = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
                    name = getattr(target, "attr", None) or getattr(target, "id", None)
                    if name in ("ActionDenied", "PermissionDenied"):
                        functions = [s for s in stack if not isinstance(s, ast.ClassDef)]
                        classes = [s for s in stack if isinstance(s, ast.ClassDef)]
                        found.append(
                            (
                                path.relative_to(ROOT),
                                ".".join(s.name for s in stack),
                                classes[-1].name if classes else None,
                                name,
                                functions[0] if functions else None,
                            )
                        )
                walk(child, stack, path)

        walk(tree, [])
    return found


def _module(path):
    return importlib.import_module(".".join(path.with_suffix("").parts))


def _calls(function, names):
    return any(
        isinstance(node, ast.Call)
        and (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) in names
        for node in ast.walk(function)
    )


def _callers(name):
    """Paths of the modules that call `name` (by its bare name)."""
    paths = set()
    for path in _sources():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                called = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
                if called == name:
                    paths.add(path.relative_to(ROOT))
    return paths


def test_every_refusal_is_raised_where_it_is_audited():
    unaudited = []
    for path, qualname, class_name, exception, function in _refusals():
        where = f"{path}:{qualname}"
        if class_name is not None:
            owner = getattr(_module(path), class_name, None)
            if isinstance(owner, type) and issubclass(owner, Action):
                continue  # an action's own refusal: execute() and authorize() audit it
        if exception == "ActionDenied":
            helper = qualname.split(".")[-1]
            callers = _callers(helper)
            if callers and all(
                "actions" in caller.parts or (str(caller), helper) in HINTS for caller in callers
            ):
                continue
            unaudited.append(f"{where}: raised outside an action (called from {sorted(callers)})")
        elif function is not None and _calls(function, {"authorize", "audit"}):
            continue
        elif where not in READS:
            unaudited.append(f"{where}: PermissionDenied without authorize() or audit()")
    assert unaudited == []


def test_the_reads_listed_still_refuse():
    listed = {f"{path}:{qualname}" for path, qualname, *_ in _refusals()}
    assert set(READS) <= listed
