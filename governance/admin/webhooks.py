"""Webhooks: endpoints created, changed and deleted by the webhook actions; the delivery log is
read-only."""

from django import forms
from django.contrib import admin

from governance.actions.create_webhook import CreateWebhook
from governance.actions.delete_webhook import DeleteWebhook
from governance.actions.update_webhook import UpdateWebhook
from governance.admin.base import ActionForm, ActionFormAdmin, ReadOnlyAdmin
from governance.choices import WebhookEvent
from governance.models import (
    WebhookDelivery,
    WebhookEndpoint,
)
from sherlock.core.admin import global_admin, run_verb


class WebhookForm(ActionForm):
    """Asks the webhook action whether it would accept the change, so a refusal is shown on the
    form; saving runs that action (governance.actions.create_webhook / update_webhook)."""

    url = forms.URLField(max_length=500, assume_scheme="https")
    events = forms.MultipleChoiceField(
        choices=WebhookEvent.choices, widget=forms.CheckboxSelectMultiple
    )
    rotate_secret = forms.BooleanField(
        required=False, help_text="Draw a new secret (receivers must be given the new one)."
    )

    class Meta:
        model = WebhookEndpoint
        fields = ["url", "events", "active"]

    checks_partial = True  # the fields are read with defaults

    def make_action(self, user):
        changes = {name: self.cleaned_data.get(name) for name in ("url", "events", "active")}
        if self.instance.pk is None:
            return CreateWebhook(acting_user=user, **changes)
        return UpdateWebhook(
            acting_user=user,
            endpoint=WebhookEndpoint.objects.get(pk=self.instance.pk),
            changes=changes,
            rotate_secret=self.cleaned_data.get("rotate_secret", False),
        )


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ActionFormAdmin, admin.ModelAdmin):
    """Endpoints are created, changed and deleted by the webhook actions (Admins only, audited).
    The secret is shown read-only to the Admin, to configure the receiver with."""

    form = WebhookForm
    list_display = ["url", "events", "active", "created_by", "updated_at"]
    list_filter = ["active"]
    readonly_fields = ["secret", "created_by", "created_at", "updated_at"]
    actions = ["delete_endpoints"]

    def get_fields(self, request, obj=None):
        fields = ["url", "events", "active"]
        return [*fields, "rotate_secret", *self.readonly_fields] if obj else fields

    def get_form(self, request, obj=None, change=False, **kwargs):
        kwargs["fields"] = ["url", "events", "active", *(["rotate_secret"] if obj else [])]
        return super().get_form(request, obj, change=change, **kwargs)

    def has_module_permission(self, request):
        return global_admin(request)

    def has_view_permission(self, request, obj=None):
        return global_admin(request)

    has_add_permission = has_module_permission

    def has_change_permission(self, request, obj=None):
        return global_admin(request)

    def has_delete_permission(self, request, obj=None):
        return global_admin(request)

    def save_model(self, request, obj, form, change):
        saved = form.make_action(request.user).execute()
        obj.pk, obj.url, obj.events, obj.active = saved.pk, saved.url, saved.events, saved.active

    def delete_model(self, request, obj):
        DeleteWebhook(acting_user=request.user, endpoint=obj).execute()

    @admin.action(description="Delete the selected endpoints", permissions=["delete"])
    def delete_endpoints(self, request, queryset):
        run_verb(
            self,
            request,
            queryset,
            lambda endpoint: DeleteWebhook(acting_user=request.user, endpoint=endpoint),
            "deleted",
        )


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    """Every attempt of every delivery, with the receiver's answer: read-only."""

    list_display = [
        "started_at",
        "event",
        "attempt",
        "status_code",
        "delivered",
        "url",
        "error",
    ]
    list_filter = ["event", "delivered"]
    search_fields = ["delivery_id", "url"]
    list_select_related = ["endpoint"]

    def has_module_permission(self, request):
        return global_admin(request)

    def has_view_permission(self, request, obj=None):
        return global_admin(request)
