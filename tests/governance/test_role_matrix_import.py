"""Importing cases in the role matrix: the Editor role, global or on this
dataset (and a global Admin), may import; Builders, Publishers, an Editor of another dataset
and outsiders may not, through the action, the API and the command alike, and a refused
import changes nothing."""

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evaluations.actions.import_cases import ImportCases
from evaluations.models import Case, DatasetVersion
from governance.models import AuditEntry
from sherlock.core.errors import ActionDenied
from tests.support import factories
from tests.support.governance import EDITORS, persona_id, split

ALLOWED, REFUSED = split(EDITORS)
may = pytest.mark.parametrize("role,scope", ALLOWED, ids=persona_id)
may_not = pytest.mark.parametrize("role,scope", REFUSED, ids=persona_id)

LINES = '{"key": "imported", "input": "New?"}\n{"key": "refund", "input": "Refund now?"}\n'


def nothing_changed(dataset):
    return (
        DatasetVersion.objects.filter(dataset=dataset).count() == 1
        and not Case.objects.filter(key="imported").exists()
        and not AuditEntry.objects.filter(action="evaluations.case.import").exists()
    )


@may
def test_editors_import_through_the_action_the_api_and_the_command(
    role, scope, persona, gate_dataset, tmp_path
):
    user = persona(role, scope)
    result = ImportCases(acting_user=user, dataset=gate_dataset, text=LINES).execute()
    assert result.added == ["imported"] and result.changed == {"refund": ["input"]}

    answer = factories.api(user).post(
        "/api/v1/datasets/gate-basics/draft/import/",
        [{"key": "by-api", "input": "x"}],
        format="json",
    )
    assert answer.status_code == 200, answer.json()
    assert answer.json()["added"] == 1

    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps({"key": "by-command", "input": "y"}) + "\n")
    out = io.StringIO()
    call_command("import_cases", "gate-basics", str(path), "--user", user.username, stdout=out)
    assert "1 added" in out.getvalue()
    assert AuditEntry.objects.filter(action="evaluations.case.import", actor=user).count() == 3


@may_not
def test_others_cannot_import_through_the_action_the_api_or_the_command(
    role, scope, persona, gate_dataset, tmp_path
):
    user = persona(role, scope)
    with pytest.raises(ActionDenied):
        ImportCases(acting_user=user, dataset=gate_dataset, text=LINES).execute()
    with pytest.raises(ActionDenied):
        ImportCases(acting_user=user, dataset=gate_dataset, text=LINES, dry_run=True).execute()

    answer = factories.api(user).post(
        "/api/v1/datasets/gate-basics/draft/import/",
        [{"key": "imported", "input": "x"}],
        format="json",
    )
    # 403 for a role that may see the dataset, 404 for a user who may not even see it.
    assert answer.status_code in (403, 404)
    assert set(answer.json()) >= {"detail", "code"}

    path = tmp_path / "cases.jsonl"
    path.write_text(LINES)
    with pytest.raises(CommandError, match="Editor role needed") as caught:
        call_command("import_cases", "gate-basics", str(path), "--user", user.username)
    assert caught.value.returncode == 2
    assert nothing_changed(gate_dataset)
