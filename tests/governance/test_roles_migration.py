"""The data migration creates the four role groups with the permissions of the four roles."""

import pytest
from django.contrib.auth.models import Group


def perms(role):
    group = Group.objects.get(name=role)
    return {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.all()}


pytestmark = pytest.mark.django_db


def test_the_four_roles_exist():
    assert set(Group.objects.values_list("name", flat=True)) >= {
        "Editor",
        "Builder",
        "Publisher",
        "Admin",
    }


def test_editor_edits_datasets_but_not_agents():
    editor = perms("Editor")
    assert {
        "evaluations.change_case",
        "evaluations.add_check",
        "evaluations.edit_dataset",
    } <= editor
    assert "agents.add_agentversion" not in editor
    assert "agents.publish_agent" not in editor


def test_builder_builds_and_requests_but_cannot_publish():
    builder = perms("Builder")
    assert {
        "agents.add_agentversion",
        "agents.build_agent",
        "evaluations.add_run",
        "governance.add_publishrequest",
    } <= builder
    assert "agents.publish_agent" not in builder
    assert "evaluations.change_case" not in builder


def test_publisher_publishes_but_has_no_bypass_right():
    publisher = perms("Publisher")
    assert "agents.publish_agent" in publisher
    assert "agents.bypass_agent" not in publisher
    assert "agents.build_agent" not in publisher


def test_admin_holds_policies_bypass_and_the_audit_log():
    admin = perms("Admin")
    assert {
        "agents.bypass_agent",
        "governance.change_publishingpolicy",
        "governance.view_auditentry",
        "auth.change_group",
    } <= admin


def test_only_admin_reads_the_audit_log():
    for role in ("Editor", "Builder", "Publisher"):
        assert "governance.view_auditentry" not in perms(role)
