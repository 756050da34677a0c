"""Users, groups and roles: roles are granted and revoked in one place, a person's People page
(`/people/<id>/`, `GrantRole`/`RevokeRole` with explicit verbs); the user's admin page links
there, and its old "Roles" address leads there. Groups, permissions and the superuser flag are
shown read-only (see `governance.admin`)."""

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin, sensitive_post_parameters_m
from django.contrib.auth.models import Group, Permission
from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch, prefetch_related_objects
from django.shortcuts import redirect
from django.urls import path, reverse
from django.utils.html import format_html

from governance.models import (
    RoleGrant,
)
from governance.people.roles import holds_admin_rights, role_grants
from sherlock.core.admin import ReadOnlyMixin, global_admin
from sherlock.core.audit import audit

User = get_user_model()
admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class SherlockUserAdmin(UserAdmin):
    """Django's user admin with rights read-only; roles change on the person's People page.
    `is_staff` is read-only: it is derived from the role grants."""

    readonly_fields = [
        "is_superuser",
        "is_staff",
        "groups",
        "user_permissions",
        "roles",
        "last_login",
    ]

    @sensitive_post_parameters_m
    def user_change_password(self, request, id, form_url=""):
        """The admin's "set password" page, which asks no old password: closed (403) to a
        non-superuser for an account with Admin rights (`holds_admin_rights`). Every password
        change, here or anywhere, is audited as `auth.user.password_change`."""
        target = self.get_object(request, unquote(id))
        if target is not None and not request.user.is_superuser and holds_admin_rights(target):
            reason = "Only a superuser sets the password of an account with Admin rights."
            if request.method == "POST":  # a refused change is in the log like every other
                audit(
                    "auth.user.refused",
                    actor=request.user,
                    target=target,
                    after={"verb": "password_change", "code": "permission_denied"},
                    reason=reason,
                )
            raise PermissionDenied(reason)
        return super().user_change_password(request, id, form_url)

    def get_fieldsets(self, request, obj=None):
        if obj is None:
            return super().get_fieldsets(request, obj)
        return [
            (None, {"fields": ["username", "password"]}),
            ("Personal info", {"fields": ["first_name", "last_name", "email"]}),
            (
                "Rights (granted on the People page)",
                {"fields": ["is_active", "is_staff", "is_superuser", "roles"]},
            ),
            ("Important dates", {"fields": ["last_login", "date_joined"]}),
        ]

    @admin.display(description="roles")
    def roles(self, obj):
        url = reverse("people:person", args=[obj.pk])
        return format_html(
            '{} <a href="{}">Grant or revoke on the People page</a>',
            describe_roles(obj) or "none",
            url,
        )

    def get_urls(self):
        return [
            path(
                "<int:user_id>/roles/",
                self.admin_site.admin_view(self.roles_view),
                name="auth_user_roles",
            ),
            *super().get_urls(),
        ]

    def roles_view(self, request, user_id):
        """Where roles were granted before the People page: that page now, for the same
        person (it refuses whoever is not a global Admin, as every grant does)."""
        return redirect("people:person", user_id)


def describe_roles(user):
    """ "Publisher (global), Builder (agent support-bot)" for the user page: the user's grants
    (`RoleGrant`), never roles inferred from the permissions they hold."""
    parts = []
    for grant in role_grants(user):
        where = grant["scope"]
        if where != "global":
            where = f"{where} {grant[where]}"
        parts.append(f"{grant['role']} ({where})")
    return ", ".join(parts)


@admin.register(RoleGrant)
class RoleGrantAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """Every role grant, for global Admins to read: who holds what where, granted by whom, when
    and why. Grants change on a user's Roles page (`GrantRole`, `RevokeRole`), never here, so
    no Admin can edit a grant's date or author (the second-Admin rule reads the audit log)."""

    list_display = ["user", "role", "scope", "agent", "dataset", "granted_by", "granted_at"]
    list_filter = ["role", "scope"]
    search_fields = ["user__username", "agent__slug", "dataset__slug"]
    list_select_related = ["user", "agent", "dataset", "granted_by"]

    def has_module_permission(self, request):
        return global_admin(request)

    def has_view_permission(self, request, obj=None):
        return global_admin(request)


@admin.register(Group)
class ReadOnlyGroupAdmin(GroupAdmin):
    """The four role groups are defined in code (governance.people.roles, migration 0002)."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def get_object(self, request, object_id, from_field=None):
        # The read-only page names each permission "content type | name": with the content
        # types fetched one permission at a time, the Admin group's page took 145 queries.
        group = super().get_object(request, object_id, from_field)
        if group is not None:
            permissions = Permission.objects.select_related("content_type")
            prefetch_related_objects([group], Prefetch("permissions", queryset=permissions))
        return group
