"""API keys: issued (the key shown once, in a message) and revoked by the API key actions."""

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.utils.html import format_html
from rest_framework_api_key.models import APIKey as LibraryAPIKey

from governance.actions.create_api_key import CreateAPIKey
from governance.actions.revoke_api_key import RevokeAPIKey
from governance.admin.base import ActionForm, ActionFormAdmin
from governance.models import (
    APIKey,
)
from sherlock.core.admin import global_admin, run_verb

# The library's own key model is not used (Sherlock's keys belong to a user): no screen for it.
admin.site.unregister(LibraryAPIKey)


class APIKeyForm(ActionForm):
    """Issue a key: the owner (an Admin chooses; anyone else issues to themselves), a name and
    the days it lives. Asks `CreateAPIKey` whether it would accept, so a refusal is shown on
    its field; saving runs it."""

    days = forms.IntegerField(
        min_value=1,
        required=False,
        help_text="Days until the key expires (default SHERLOCK_API_KEY_DAYS, at most "
        "SHERLOCK_API_KEY_MAX_DAYS).",
    )

    class Meta:
        model = APIKey
        fields = ["user", "name"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["days"].initial = settings.SHERLOCK_API_KEY_DAYS

    checks_partial = True  # the fields are read with defaults

    def make_action(self, user):
        return CreateAPIKey(
            acting_user=user,
            user=self.cleaned_data.get("user") or user,
            name=self.cleaned_data.get("name", ""),
            days=self.cleaned_data.get("days"),
            reason="admin",
        )


@admin.register(APIKey)
class APIKeyAdmin(ActionFormAdmin, admin.ModelAdmin):
    """Issue and revoke API keys. A global Admin sees and revokes everyone's keys and issues
    them to anyone; another staff user sees only their own and issues keys to themselves. The
    key is shown once, in the message after saving: only its hash is stored."""

    form = APIKeyForm
    list_display = ["name", "prefix", "user", "state", "expiry_date", "last_used_at"]
    list_filter = ["revoked"]
    list_select_related = ["user"]
    search_fields = ["name", "prefix", "user__username"]
    autocomplete_fields = ["user"]  # a username typed and picked, not a bare id
    actions = ["revoke_keys"]
    readonly_fields = [
        "prefix",
        "user",
        "name",
        "state",
        "created",
        "expiry_date",
        "last_used_at",
        "issued_by",
        "revoked_at",
        "revoked_by",
    ]

    @admin.display(description="state")
    def state(self, obj):
        return obj.state

    def get_queryset(self, request):
        keys = super().get_queryset(request)
        return keys if global_admin(request) else keys.filter(user=request.user)

    def get_fields(self, request, obj=None):
        if obj is not None:
            return self.readonly_fields
        return ["user", "name", "days"] if global_admin(request) else ["name", "days"]

    def get_readonly_fields(self, request, obj=None):
        return self.readonly_fields if obj is not None else []

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["fields"] = [f for f in self.get_fields(request) if f != "days"]
        return super().get_form(request, obj, change=change, **kwargs)

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request, obj=None):
        # A row outside get_queryset (another user's key) is answered 404 by the admin itself.
        return self.has_module_permission(request)

    def has_add_permission(self, request):
        return self.has_module_permission(request)

    def has_change_permission(self, request, obj=None):
        return False  # a key is never edited: issued, then revoked

    def has_delete_permission(self, request, obj=None):
        return False  # revoked, not deleted: the row is the record of the key

    def has_revoke_permission(self, request):
        return self.has_module_permission(request)

    def save_model(self, request, obj, form, change):
        api_key, secret = form.make_action(request.user).execute()
        obj.pk, obj.name, obj.prefix = api_key.pk, api_key.name, api_key.prefix
        self.message_user(
            request,
            format_html(
                "The API key of {} is <code>{}</code> (expires {}). Copy it now: it is stored "
                "hashed and cannot be shown again. Send it as <code>Authorization: Token "
                "&lt;key&gt;</code>.",
                api_key.user,
                secret,
                f"{api_key.expiry_date:%Y-%m-%d}",
            ),
            messages.WARNING,
        )

    def save_related(self, request, form, formsets, change):
        """Nothing else to save: the action wrote the row."""

    @admin.action(description="Revoke the selected keys", permissions=["revoke"])
    def revoke_keys(self, request, queryset):
        run_verb(
            self,
            request,
            queryset.select_related("user"),
            lambda api_key: RevokeAPIKey(acting_user=request.user, api_key=api_key, reason="admin"),
            "revoked",
        )
