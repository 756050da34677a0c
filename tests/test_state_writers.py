"""Every state machine moves through its one mover (`sherlock.core.states.StateMachine.move`).

The production source is read, not run: a write of a machine's field anywhere else (a queryset
`update`, `bulk_update`, `update_or_create`, `save(update_fields=...)` or raw SQL) fails this
test, and so does such a write on a queryset whose model the reader cannot tell. Creating a row
in its first state is no transition and is not looked at; neither are the tests.
"""

import ast
import importlib
import re
from pathlib import Path

from django.apps import apps

from sherlock.core.states import StateMachine

ROOT = Path(__file__).resolve().parent.parent
APPS = ("agents", "evaluations", "governance", "production")
# Every app's machines, found in its `choices` module (where a machine is declared, once): a
# new app or a new machine is covered without an edit here.
MACHINES = tuple(
    value
    for app in APPS
    for value in vars(importlib.import_module(f"{app}.choices")).values()
    if isinstance(value, StateMachine)
)
MOVER = ROOT / "sherlock" / "core" / "states.py"
PACKAGES = (*APPS, "sherlock")


def machine_models():
    by_name = {}
    for machine in MACHINES:
        (model,) = [m for m in apps.get_models() if m.__name__ == machine.model]
        by_name[machine.model] = (model, machine.field)
    return by_name


def other_models_with(fields):
    """Models that have a `state` or `status` field of their own, no machine's (trials, judge
    calls): writes on them are not this test's business."""
    machines = {machine.model for machine in MACHINES}
    return {
        model.__name__
        for model in apps.get_models()
        if model.__name__ not in machines and any(f.name in fields for f in model._meta.fields)
    }


def chain_root(node):
    """The name a call chain starts from: `Run` for `Run.objects.filter(...).update(...)`,
    `rows` for `rows.update(...)`, None when it starts from a call (`type(obj)...`)."""
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Name):
            return node.id
        else:
            return None


def strings(node):
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return {e.value for e in node.elts if isinstance(e, ast.Constant)}
    if isinstance(node, ast.Dict):
        return {k.value for k in node.keys if isinstance(k, ast.Constant)}
    return set()


def written_fields(call):
    """The field names a call writes, if it is one of the ORM's writes."""
    if not isinstance(call.func, ast.Attribute):
        return set()
    method = call.func.attr
    keywords = {k.arg: k.value for k in call.keywords}
    if method == "update":
        return {name for name in keywords if name}
    if method == "bulk_update":
        fields = call.args[1] if len(call.args) > 1 else keywords.get("fields")
        return strings(fields) if fields is not None else set()
    if method == "update_or_create" and "defaults" in keywords:
        return strings(keywords["defaults"])
    if method == "save" and "update_fields" in keywords:
        return strings(keywords["update_fields"])
    return set()


def state_writes(source, path="<source>"):
    """(path, line, what) of every write of a machine's field in `source` outside the mover."""
    machines = machine_models()
    fields = {field for _, field in machines.values()}
    others = other_models_with(fields)
    tables = {model._meta.db_table: field for model, field in machines.values()}
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            written = written_fields(node) & fields
            if not written:
                continue
            root = chain_root(node.func.value)
            if root in machines and machines[root][1] in written:
                found.append((path, node.lineno, f"{root}.{machines[root][1]}"))
            elif root not in machines and root not in others:
                found.append((path, node.lineno, f"{sorted(written)} on {root or 'a call'}"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            for table, field in tables.items():
                pattern = rf'UPDATE\s+"?{table}"?\s.*\bSET\b.*\b{field}\b'
                if re.search(pattern, node.value, re.IGNORECASE | re.DOTALL):
                    found.append((path, node.lineno, f"SQL on {table}.{field}"))
    return found


def production_modules():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts and path != MOVER:
                yield path


def test_no_code_but_the_mover_writes_a_state_field():
    found = []
    for path in production_modules():
        found += state_writes(path.read_text(), str(path.relative_to(ROOT)))
    assert found == []


def test_the_reader_finds_each_kind_of_write():
    bad = """
Run.objects.filter(pk=1).update(status="completed")
AgentVersion.objects.filter(pk=1).update(state="published", note="x")
PublishRequest.objects.bulk_update(rows, ["state"])
Bypass.objects.update_or_create(pk=1, defaults={"state": "used"})
version.save(update_fields=["state"])
rows.update(status="running")
cursor.execute('UPDATE "evaluations_run" SET status = %s WHERE id = %s')
"""
    assert [line for _, line, _ in state_writes(bad)] == [2, 3, 4, 5, 6, 7, 8]


def test_writes_of_other_models_states_and_of_other_fields_are_left_alone():
    fine = """
Trial.objects.filter(pk=1).update(status="running")
Run.objects.filter(pk=1).update(summary={}, finished_at=now)
Run.objects.create(status="completed")
"""
    assert state_writes(fine) == []


def test_every_apps_machines_are_read():
    assert {machine.model for machine in MACHINES} >= {
        "AgentVersion",
        "Run",
        "PublishRequest",
        "Bypass",
        "Trace",
        "RollbackProposal",
        "TraceScore",
    }
