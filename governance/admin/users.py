"""Users, groups and roles: roles are granted and revoked on a user's "Roles" page through
`GrantRole`/`RevokeRole`; groups, permissions and the superuser flag are shown read-only (see
`governance.admin`)."""

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin, sensitive_post_parameters_m
from django.contrib.auth.models import Group, Permission
from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch, prefetch_related_objects
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from governance.actions.grant_role import GrantRole
from governance.actions.revoke_role import RevokeRole
from governance.admin.base import global_admin
from governance.models import (
    RoleGrant,
)
from governance.role_forms import RoleForm
from governance.roles import holds_admin_rights, role_grants
from sherlock.core.admin import ReadOnlyMixin
from sherlock.core.audit import audit
from sherlock.core.errors import ActionError

User = get_user_model()
admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class SherlockUserAdmin(UserAdmin):
    """Django's user admin with rights read-only; roles change on the user's Roles page (or on
    the People page). `is_staff` is read-only: it is derived from the role grants."""

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
                "Rights (granted on the Roles page)",
                {"fields": ["is_active", "is_staff", "is_superuser", "roles"]},
            ),
            ("Important dates", {"fields": ["last_login", "date_joined"]}),
        ]

    @admin.display(description="roles")
    def roles(self, obj):
        url = reverse("admin:auth_user_roles", args=[obj.pk])
        return format_html('{} <a href="{}">Manage roles</a>', describe_roles(obj) or "none", url)

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
        if request.method == "POST":
            # A refused change is audited by its action, before anything is read.
            verb = GrantRole if "grant" in request.POST else RevokeRole
            try:
                verb(acting_user=request.user, user=None, role="").authorize()
            except ActionError as exc:
                raise PermissionDenied(str(exc)) from None
        if not global_admin(request):
            raise PermissionDenied
        target = get_object_or_404(User, pk=user_id)
        form = RoleForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            verb = GrantRole if "grant" in request.POST else RevokeRole
            try:
                verb(
                    acting_user=request.user,
                    user=target,
                    role=form.cleaned_data["role"],
                    obj=form.scope,
                    reason=form.cleaned_data["reason"],
                ).execute()
            except ActionError as exc:
                self.message_user(request, str(exc), messages.ERROR)
            else:
                self.message_user(request, "Roles changed.", messages.SUCCESS)
            return redirect("admin:auth_user_roles", user_id)
        return TemplateResponse(
            request,
            "admin/governance/user_roles.html",
            {
                **self.admin_site.each_context(request),
                "title": f"Roles of {target}",
                "target": target,
                "roles": describe_roles(target),
                "grants": sorted(
                    RoleGrant.objects.filter(user=target).select_related(
                        "agent", "dataset", "granted_by"
                    ),
                    key=lambda g: (g.scope != "global", g.scope, str(g.obj or ""), g.role),
                ),
                "form": form,
                "opts": User._meta,
            },
        )


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
    """The four role groups are defined in code (governance.roles, migration 0002)."""

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
