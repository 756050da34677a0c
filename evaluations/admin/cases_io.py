"""Admin pages for a dataset's cases as files and for comparing its versions:

- the dataset's page lists its versions (links, state, counts, downloads) and links to
- the import page (`<id>/import/`): upload a file or paste it, choose the format or let it be
  detected, see the preview (added, changed with the fields, unchanged, every error with its
  line), then confirm. Nothing is written before the confirmation; the preview and the import
  are the same `ImportCases` (the dry run, then the real one on the same text, kept in the
  session in between, so a large file is not sent twice; the file is bounded by the import's
  size limit before it is read, `cases_io.read_upload`, and Django compresses session data);
- the compare page (`<id>/compare/?a=N&b=M`): `diff_versions` of two versions;
- "Export cases" admin actions on dataset versions (JSONL or CSV download).

A refusal (no Editor role, bad rows) is a message or an error on the form, never a bare 403.
`DatasetCasesIOMixin` and `EXPORT_ACTIONS` are the only hooks the datasets' admin needs.
"""

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.views.decorators.csrf import csrf_protect

from evaluations.actions.import_cases import CasesInvalid, ImportCases
from evaluations.admin.base import with_counts
from evaluations.cases_io import (
    FORMAT_LABELS,
    MEDIA_TYPES,
    READ_FORMATS,
    export_cases,
    max_bytes,
    read_upload,
    too_large,
)
from evaluations.models import Dataset
from evaluations.reads.dataset_diff import diff_versions
from sherlock.core.admin import AdminMixin
from sherlock.core.errors import ActionError
from sherlock.core.hidden import audit_hidden
from sherlock.core.pickers import picker_media

SESSION_KEY = "evaluations_cases_import"
# What a multipart body holds besides the file (boundaries, the token, the format and text
# fields): a body this much over the file limit is refused before it is read.
MULTIPART_SLACK = 64 * 1024
UNREADABLE = (
    "The file cannot be read, or has too many errors to preview: fix it where the table says, "
    "then preview again."
)


class ImportForm(forms.Form):
    file = forms.FileField(required=False, help_text="a cases file (docs/cases.md)")
    text = forms.CharField(
        required=False,
        label="or paste the cases",
        widget=forms.Textarea(attrs={"rows": 10, "cols": 100, "spellcheck": "false"}),
    )
    format = forms.ChoiceField(
        required=False,
        choices=[("", "Detect from the file name and content")]
        + [(name, FORMAT_LABELS[name]) for name in READ_FORMATS],
    )

    def clean(self):
        super().clean()
        data = self.cleaned_data
        upload = data.get("file")
        if upload is not None:
            # The reader every import path shares: over the limit, refused by its size unread.
            try:
                data["source"] = read_upload(upload, upload.size)
            except ActionError as exc:
                self.add_error("file", str(exc))
                return data
            data["filename"] = upload.name
        elif data.get("text", "").strip():
            data["source"], data["filename"] = data["text"], None
        else:
            raise forms.ValidationError("Choose a file or paste the cases.")
        return data


def pretty(value):
    return json.dumps(value, indent=1, ensure_ascii=False) if not isinstance(value, str) else value


class DatasetCasesIOMixin(AdminMixin):
    """DatasetAdmin's import and compare pages, and its versions list."""

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path(
                "<path:object_id>/import/",
                view(self._bounded_import_view()),
                name="evaluations_dataset_import",
            ),
            path(
                "<path:object_id>/compare/",
                view(self.compare_versions_view),
                name="evaluations_dataset_compare",
            ),
            *super().get_urls(),
        ]

    def _bounded_import_view(self):
        """The import page, with the body's declared size checked before anything reads it.
        The CSRF check reads a multipart body whole (into temporary files) to find its token,
        so the view is exempt from the middleware's check and runs `csrf_protect` itself once
        the size is known to be within the limit (as the API's parsers refuse it unread)."""
        protected = csrf_protect(self.import_cases_view)

        def bounded(request, object_id):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if request.method == "POST" and length > max_bytes() + MULTIPART_SLACK:
                return self._too_large(request, object_id, length)
            return protected(request, object_id)

        bounded.csrf_exempt = True  # type: ignore[attr-defined]  # a view function attribute Django reads
        return bounded

    def _too_large(self, request, object_id, length):
        """The import page again, the refusal on its file field; the body is never read."""
        dataset = self._visible(request, object_id, verb="import")
        if dataset is None:
            return self._missing(request)
        form = ImportForm()
        form.errors["file"] = form.error_class([str(too_large(length))])
        back = reverse("admin:evaluations_dataset_change", args=[dataset.pk])
        response = self._page(
            request,
            dataset,
            "import_cases.html",
            f"Import cases into {dataset}",
            {"back": back, "form": form},
        )
        response.status_code = 413
        return response

    def change_view(self, request, object_id, form_url="", extra_context=None):
        dataset = self._visible(request, object_id)
        extra = dict(extra_context or {})
        if dataset is not None:
            extra["versions"] = list(
                with_counts(dataset.versions.select_related("frozen_by")).order_by("-number")
            )
            extra["may_import"] = self._import_action(request, dataset).allowed()
        return super().change_view(request, object_id, form_url, extra)

    def _visible(self, request, object_id, verb=None):
        try:
            dataset = Dataset.objects.for_user(request.user).filter(pk=int(object_id)).first()
        except ValueError:
            dataset = None
        if dataset is None and verb:  # a posted verb on a hidden dataset is audited (not a GET)
            audit_hidden(request, Dataset, {"pk": object_id}, verb=verb)
        return dataset

    def _missing(self, request):
        messages.error(request, "That dataset does not exist, or you may not see it.")
        return redirect("admin:index")

    def _import_action(self, request, dataset, **kwargs):
        kwargs.setdefault("cases", [])
        return ImportCases(acting_user=request.user, dataset=dataset, **kwargs)

    def _page(self, request, dataset, template, title, context):
        return TemplateResponse(
            request,
            f"admin/evaluations/dataset/{template}",
            {
                **self.admin_site.each_context(request),
                "opts": self.model._meta,
                "original": dataset,
                "dataset": dataset,
                "title": title,
                **context,
            },
        )

    def import_cases_view(self, request, object_id):
        dataset = self._visible(request, object_id, verb="import")
        if dataset is None:
            return self._missing(request)
        back = reverse("admin:evaluations_dataset_change", args=[dataset.pk])
        try:
            self._import_action(request, dataset).check()
        except ActionError as exc:
            messages.error(request, str(exc))
            return redirect(back)
        context: dict[str, Any] = {"back": back}
        form = ImportForm()
        if request.method == "POST" and "confirm" in request.POST:
            return self._confirm(request, dataset, back)
        if request.method == "POST":
            form = ImportForm(request.POST, request.FILES)
            if form.is_valid():
                data = form.cleaned_data
                fmt = data.get("format") or None
                try:
                    preview = self._import_action(
                        request,
                        dataset,
                        cases=None,
                        text=data["source"],
                        fmt=fmt,
                        filename=data["filename"],
                        dry_run=True,
                    ).execute()
                except CasesInvalid as exc:  # the file cannot be read at all: the line says where
                    form.add_error(None, UNREADABLE)
                    context["errors"] = exc.errors
                except ActionError as exc:
                    form.add_error("format" if exc.field == "format" else None, str(exc))
                else:
                    context["preview"] = preview
                    context["changed"] = sorted(preview.changed.items())
                    if not preview.errors:
                        # The session holds text: the preview has just decoded it without error.
                        source = data["source"]
                        request.session[SESSION_KEY] = {
                            "dataset": dataset.pk,
                            "text": source.decode("utf-8-sig")
                            if isinstance(source, bytes)
                            else source,
                            "format": preview.format,
                            "filename": data["filename"],
                        }
                    context["filename"] = data["filename"]
        context["form"] = form
        return self._page(
            request, dataset, "import_cases.html", f"Import cases into {dataset}", context
        )

    def _confirm(self, request, dataset, back):
        pending = request.session.get(SESSION_KEY)
        if not pending or pending["dataset"] != dataset.pk:
            messages.error(request, "Nothing to import: preview a file first.")
            return redirect("admin:evaluations_dataset_import", dataset.pk)
        try:
            result = self._import_action(
                request,
                dataset,
                cases=None,
                text=pending["text"],
                fmt=pending["format"],
                filename=pending["filename"],
            ).execute()
        except CasesInvalid as exc:
            # The draft changed since the preview (another edit): show the new errors.
            messages.error(request, str(exc))
            return self._page(
                request,
                dataset,
                "import_cases.html",
                f"Import cases into {dataset}",
                {"back": back, "form": ImportForm(), "errors": exc.errors},
            )
        except ActionError as exc:
            messages.error(request, str(exc))
            return redirect(back)
        request.session.pop(SESSION_KEY, None)
        counts = result.counts()
        started = result.started_words()
        messages.success(
            request,
            f"Imported into {result.version}{started}: {counts['added']} added, "
            f"{counts['changed']} changed, {counts['unchanged']} unchanged.",
        )
        return redirect("admin:evaluations_datasetversion_change", result.version.pk)

    def compare_versions_view(self, request, object_id):
        dataset = self._visible(request, object_id)
        if dataset is None:
            return self._missing(request)
        # The two versions are pickers (/pick/dataset-version/?dataset=<id>, by number): the page
        # reads the newest two (the default pair) and the two asked for, never every version.
        newest = list(dataset.versions.order_by("-number")[:2])
        context: dict[str, Any] = {
            "versions": newest,
            "a": None,
            "b": None,
            "picker_media": picker_media(),
        }
        if len(newest) < 2:
            messages.info(request, "This dataset has fewer than two versions to compare.")
        else:
            a = _number(request.GET.get("a"), newest[1].number)
            b = _number(request.GET.get("b"), newest[0].number)
            by_number = {v.number: v for v in dataset.versions.filter(number__in=[a, b])}
            context.update(a=a, b=b, a_text=by_number.get(a), b_text=by_number.get(b))
            if a not in by_number or b not in by_number:
                messages.error(request, "Choose two versions of this dataset.")
            else:
                diff = diff_versions(by_number[a], by_number[b])
                for part in ("cases", "checks"):
                    for item in diff[part]["changed"]:
                        item["rows"] = [
                            (name, pretty(values["a"]), pretty(values["b"]))
                            for name, values in item["fields"].items()
                        ]
                context.update(a=a, b=b, diff=diff)
        return self._page(
            request, dataset, "compare_versions.html", f"Compare versions of {dataset}", context
        )


def _number(raw, default):
    try:
        return int(raw) if raw not in (None, "") else default
    except ValueError:
        return None


def _export_action(fmt):
    def export(modeladmin, request, queryset):
        versions = list(queryset.select_related("dataset")[:2])
        if len(versions) != 1:
            modeladmin.message_user(
                request, "Select one dataset version to export.", messages.WARNING
            )
            return None
        version = versions[0]
        response = HttpResponse(export_cases(version, fmt), content_type=MEDIA_TYPES[fmt])
        name = f"{version.dataset.slug}-v{version.number}.{fmt}"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response

    export.__name__ = f"export_cases_{fmt}"
    return admin.action(description=f"Export cases ({fmt.upper()})")(export)


EXPORT_ACTIONS = [_export_action("jsonl"), _export_action("csv")]
