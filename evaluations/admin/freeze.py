"""The admin's "Freeze" of a draft dataset version: a confirmation page, not an instant bulk
action.

Freezing cannot be undone: the version's cases, checks and case overrides become read-only,
runs may pin it, and a later change needs a new draft. So the page says what becomes
read-only (the counts, the case keys, the checks by mode) and takes an optional note, and the
person confirms; `FreezeDatasetVersion` then freezes and audits it
(`evaluations.dataset_version.freeze`, the note as its reason). The confirmation carries what
the person saw (the counts, `seen`): if the draft changed meanwhile, the page shows it again
with the new figures instead of freezing a version nobody read. A refusal (not an Editor,
already frozen, no case) is a message, never a bare 403.
"""

from django import forms
from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import reverse

from evaluations.actions.freeze_dataset_version import FreezeDatasetVersion
from evaluations.admin.base import visible_datasets
from evaluations.checks import REGISTRY
from evaluations.choices import CheckMode
from evaluations.judge.setup import no_judge_warning
from evaluations.models import DatasetVersion
from sherlock.core.admin import message_as_written
from sherlock.core.errors import ActionError, refusal_in
from sherlock.core.limits import NOTE_MAX

KEYS_SHOWN = 20  # case keys named on the page; the rest are counted


class FreezeForm(forms.Form):
    note = forms.CharField(
        required=False,
        max_length=NOTE_MAX,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text="Optional: why this version is ready (kept on the version and in the audit "
        "log). Empty keeps the version's note.",
    )
    seen = forms.CharField(widget=forms.HiddenInput)


def freeze_summary(version):
    """What freezing `version` makes read-only, in figures (two queries): its cases (count,
    the first keys), its checks (count, by mode, their labels), the cases with overrides, and
    the no-judge warning when blocking model checks could not be scored."""
    keys = list(version.case_versions.order_by("case__key").values_list("case__key", "overrides"))
    rows = list(version.checks.order_by("position", "pk").values_list("label", "mode", "kind"))
    checks = [(label, mode) for label, mode, _ in rows]
    modes = {mode: sum(1 for _, m in checks if m == mode) for mode in CheckMode.values}
    # What the check's own page warned when it was saved, said again before it is frozen.
    unscorable = [
        label
        for label, mode, kind in rows
        if mode == CheckMode.BLOCKING and getattr(REGISTRY.get(kind), "uses_model", False)
    ]
    return {
        "no_judge": no_judge_warning(unscorable),
        "cases": len(keys),
        "keys": [key for key, _ in keys[:KEYS_SHOWN]],
        "more_keys": max(0, len(keys) - KEYS_SHOWN),
        "overridden": sum(1 for _, overrides in keys if overrides),
        "checks": len(checks),
        "check_labels": [label for label, _ in checks],
        "modes": {mode: n for mode, n in modes.items() if n},
        "seen": f"{len(keys)}:{len(checks)}:{sum(1 for _, o in keys if o)}",
    }


def freeze_view(modeladmin, request, object_id):
    """GET: the confirmation; POST with the `seen` figures still true: freeze, back to the
    version's page with a message."""
    version = get_object_or_404(  # a version one may not see is not found
        DatasetVersion.objects.select_related("dataset"),
        pk=object_id,
        dataset__in=visible_datasets(request),
    )
    page = reverse("admin:evaluations_datasetversion_change", args=[version.pk])
    action = FreezeDatasetVersion(acting_user=request.user, dataset_version=version)
    try:
        action.check()
    except ActionError as exc:
        refusal = refusal_in(exc)
        if request.method == "POST" and refusal is not None:
            action.audit_refusal(refusal)  # trying to freeze without the role is recorded
        message_as_written(modeladmin, request, f"{version}: {exc}", messages.ERROR)
        return redirect(page)
    summary = freeze_summary(version)
    form = FreezeForm(request.POST or None, initial={"seen": summary["seen"]})
    changed = False
    if request.method == "POST" and form.is_valid():
        if form.cleaned_data["seen"] != summary["seen"]:
            changed = True  # the draft changed since the page was read: show it again
            form = FreezeForm(initial={"seen": summary["seen"], "note": form.cleaned_data["note"]})
        else:
            action.note = form.cleaned_data["note"]
            try:
                action.execute()
            except ActionError as exc:
                if exc.field != "note":
                    message_as_written(modeladmin, request, f"{version}: {exc}", messages.ERROR)
                    return redirect(page)
                form.add_error("note", str(exc))
            else:
                message_as_written(modeladmin, request, f"{version}: frozen.", messages.SUCCESS)
                return redirect(page)
    return TemplateResponse(
        request,
        "admin/evaluations/datasetversion/freeze.html",
        {
            **modeladmin.admin_site.each_context(request),
            "title": f"Freeze {version}?",
            "version": version,
            "summary": summary,
            "form": form,
            "changed": changed,
            "back": page,
            "opts": DatasetVersion._meta,
        },
    )
