"""The audit log's vocabulary, listed once: every code the production code can write.

The log is append-only, so its codes outlive the code that writes them. Every action declares
its noun and verb (`sherlock.core.actions.Action`), and the template builds every code it
writes from them, success and refusal (`self.audit(...)`, naming another verb or noun where a
verb writes a second entry): renaming a module or a class changes no code. The codes are read
from the source (every `self.audit(...)` of an action, expanded over the actions that run it,
and the first argument of every other `audit(...)` call) and from the actions' refusal codes,
and compared with `VOCABULARY`: a new code is added there on purpose, and a code that
disappears is seen. Forms built from data (a model's name in the admin, a permission's
verb) are listed as written, with their placeholder.
"""

import ast
import importlib
import pkgutil
from pathlib import Path

from sherlock.core.actions import Action

ROOT = Path(__file__).resolve().parent.parent
APPS = ("agents", "evaluations", "governance", "production")

VOCABULARY = """
agents.agent.create
agents.agent.refused
agents.tool.refused
agents.version.create
agents.version.refused
agents.version.update
auth.membership.{verb}
auth.permission.{verb}
auth.user.login
auth.user.login_failed
auth.user.logout
auth.user.password_change
auth.user.privileges
auth.user.refused
evaluations.case.create
evaluations.case.import
evaluations.case.refused
evaluations.case.remove
evaluations.case.update
evaluations.check.create
evaluations.check.delete
evaluations.check.refused
evaluations.check.update
evaluations.check_result.label
evaluations.check_result.refused
evaluations.dataset.create
evaluations.dataset.refused
evaluations.dataset_version.create
evaluations.dataset_version.freeze
evaluations.dataset_version.import
evaluations.dataset_version.refused
evaluations.run.cancel
evaluations.run.claim
evaluations.run.expire
evaluations.run.finish
evaluations.run.import
evaluations.run.refused
evaluations.run.start
evaluations.run.stop_early
evaluations.run.summarize
evaluations.run.upload
evaluations.schedule.create
evaluations.schedule.delete
evaluations.schedule.pause
evaluations.schedule.refused
evaluations.schedule.resume
evaluations.schedule.update
governance.apikey.create
governance.apikey.refused
governance.apikey.revoke
governance.attestation.create
governance.audit.export
governance.audit.refused
governance.bypass.approve
governance.bypass.deny
governance.bypass.expire
governance.bypass.refused
governance.bypass.request
governance.bypass.revoke
governance.bypass.use
governance.gate_datasets.refused
governance.gate_datasets.set
governance.policy.change
governance.policy.create
governance.policy.refused
governance.request.create
governance.request.decide
governance.request.refused
governance.request.supersede
governance.role.grant
governance.role.refused
governance.role.revoke
governance.sso.configure
governance.sso.map
governance.sso.refused
governance.sso.unmap
governance.user.join
governance.user.invite
governance.user.refused
governance.user.deactivate
governance.user.reactivate
governance.version.publish
governance.version.refused
governance.version.retire
governance.version.rollback
governance.webhook.change
governance.webhook.create
governance.webhook.delete
governance.webhook.refused
production.online_rule.create
production.online_rule.refused
production.online_rule.update
production.rollback_proposal.confirm
production.rollback_proposal.dismiss
production.rollback_proposal.open
production.rollback_proposal.refused
production.trace.add_to_dataset
production.trace.refused
production.trace_result.label
production.trace_result.refused
sherlock.request.refused
{kind}.refused
{self._code(...)}
""".split()  # noqa: SIM905 - one code a line reads better than a list literal


def actions():
    """Every action class of the apps, imported from their `actions` packages."""
    for app in APPS:
        package = importlib.import_module(f"{app}.actions")
        for module in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{app}.actions.{module.name}")

    def below(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from below(sub)

    return {cls for cls in below(Action) if cls.__module__.split(".")[0] in APPS}


def verbs_of(cls):
    """The verbs an action can write: its declared one."""
    return {cls.verb} if cls.verb else set()


def action_codes(node, class_name, classes):
    """The codes `self.audit(...)` writes in `class_name`: `<app>.<noun>.<verb>` of every action
    that runs it, its noun and verb unless the call names others (`verb="retire"`)."""
    named = {k.arg: k.value.value for k in node.keywords if k.arg in ("noun", "verb")}
    codes = set()
    for cls in (c for c in classes if class_name in {k.__name__ for k in c.__mro__}):
        app = cls.__module__.split(".")[0]
        for verb in {named["verb"]} if "verb" in named else verbs_of(cls):
            codes.add(f"{app}.{named.get('noun', cls.noun)}.{verb}")
    return codes


def concrete(classes):
    """Actions a caller runs: not the shared bases (`base`, `_`-prefixed modules, or a class
    that declares no verb of its own and has subclasses that do)."""
    return {
        cls
        for cls in classes
        if not (module := cls.__module__.rsplit(".", 1)[-1]).startswith("_")
        and module != "base"
        and not (cls.__subclasses__() and not verbs_of(cls))
    }


def expand(node, class_name, classes):
    """The codes an `audit()` call's first argument can be."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.IfExp):
        return expand(node.body, class_name, classes) | expand(node.orelse, class_name, classes)
    if isinstance(node, ast.JoinedStr):
        parts = [
            ast.unparse(v.value) if isinstance(v, ast.FormattedValue) else v.value
            for v in node.values
        ]
        holes = {
            p for v, p in zip(node.values, parts, strict=True) if isinstance(v, ast.FormattedValue)
        }
        if holes == {"self.verb"} and class_name:
            runners = [c for c in classes if class_name in {k.__name__ for k in c.__mro__}]
            verbs = set().union(*(verbs_of(c) for c in runners))
            text = "".join(
                "{}" if isinstance(v, ast.FormattedValue) else v.value for v in node.values
            )
            return {text.format(verb) for verb in verbs}
        if holes & {"self.noun", "app", "noun"}:
            return set()  # a refusal: counted from the actions' declared nouns
        return {
            "".join(
                "{" + p + "}" if isinstance(v, ast.FormattedValue) else p
                for v, p in zip(node.values, parts, strict=True)
            )
        }
    if isinstance(node, ast.Call):
        return {"{" + ast.unparse(node.func) + "(...)}"}
    raise AssertionError(f"an audit code that is not read: {ast.unparse(node)}")


def written_codes(classes):
    codes = set()
    for package in ("sherlock", *APPS):
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            tree = ast.parse(path.read_text())
            for cls_node in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)] + [tree]:
                name = getattr(cls_node, "name", None)
                body = (
                    cls_node.body
                    if name
                    else [n for n in tree.body if not isinstance(n, ast.ClassDef)]
                )
                for node in (n for stmt in body for n in ast.walk(stmt)):
                    func = getattr(node, "func", None)
                    called = getattr(func, "id", None) or getattr(func, "attr", None)
                    if not (isinstance(node, ast.Call) and called == "audit"):
                        continue
                    if isinstance(func, ast.Attribute) and ast.unparse(func) == "self.audit":
                        codes |= action_codes(node, name, classes)
                    elif node.args and "self.audit_code" not in ast.unparse(node.args[0]):
                        codes |= expand(node.args[0], name, classes)
    return codes


def test_every_action_declares_its_audit_noun_and_verb():
    undeclared = [cls.__name__ for cls in concrete(actions()) if not (cls.noun and verbs_of(cls))]
    assert undeclared == []


def test_the_vocabulary_lists_every_code_written_once():
    classes = actions()
    refusals = {f"{cls.__module__.split('.')[0]}.{cls.noun}.refused" for cls in concrete(classes)}
    assert len(VOCABULARY) == len(set(VOCABULARY))
    assert sorted(written_codes(classes) | refusals) == sorted(VOCABULARY)


def test_actions_build_their_codes_from_their_noun_and_verb():
    """No action writes a code as text: a code spelled by hand drifts from the noun and verb its
    refusals are recorded under."""
    spelled = []
    for app in APPS:
        for path in sorted((ROOT / app / "actions").glob("*.py")):
            tree = ast.parse(path.read_text())
            for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
                for node in ast.walk(cls):
                    func = getattr(node, "func", None)
                    if isinstance(func, ast.Name) and func.id == "audit":
                        spelled.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert spelled == []
