"""Admin for governance, one module per group of pages (`versions`, `policies`, `publishing`,
`audit`, `users`, `webhooks`, `api_keys`; what they share in `base`). Every change goes through
a governance action: the publishing verbs are admin actions on versions, requests and bypasses
(and "Start a run…" on a version, through `evaluations.admin.start_run`); policies are created
and changed (a new version each time) by the policy actions; webhook endpoints by the webhook
actions (their delivery log is read-only); roles are granted and revoked on a user's "Roles"
page; API keys are issued (the key shown once, in a message) and revoked by the API key actions.
Requests, decisions, bypasses and the audit log are otherwise read-only.

Rights cannot be edited behind the actions' back: the user page shows groups, permissions and
the superuser flag read-only, the group page is read-only, and django-guardian's object
permission screens (`GuardedModelAdmin`) are not mounted, since they let any staff user who may
change a model grant themselves rights on it (django-guardian #756). The user page's `is_active`
stays editable (access, not rights) and is audited with the acting Admin
(`governance.receivers`); `is_staff` is read-only, derived from the role grants
(`governance.people.roles.derive_staff`: anyone with a role uses the admin); only a superuser may
set the password of an account that holds Admin rights, so the second Admin of a bypass
cannot be a colleague whose password another Admin just reset."""

from django.contrib import admin

from governance.admin import (  # noqa: F401 - importing registers the pages
    api_keys,
    audit,
    gate_datasets,
    policies,
    publishing,
    users,
    versions,
    webhooks,
)

admin.site.site_header = "Sherlock administration"
admin.site.site_title = "Sherlock"
admin.site.index_title = "Sherlock"
