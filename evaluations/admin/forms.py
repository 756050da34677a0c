"""The admin's case and check forms: fields a person can fill in, turned into what the case and
check actions take.

Plain text where the data is text (a string input, the expected output), one item per line for
lists of strings (contexts, tags), JSON only where the data is JSON (expected tools, table,
chart, trajectory, outcome check, overrides, a structured input), each with its format in the
help text and a link to the section of docs/checks.md that defines it (the admin serves the docs
as pages, `evaluations.admin.docs`). The forms do not write: `action_fields()` gives the action
its keywords, and a refusal of the action comes back through `sherlock.core.forms.show_refusal`, on
the field it names.
"""

import json
import re

from django import forms
from django.template.loader import render_to_string
from django.urls import reverse_lazy
from django.utils.safestring import mark_safe

from evaluations.actions.case_fields import CASE_FIELDS, content_errors, key_errors
from evaluations.actions.check_fields import CHECK_FIELDS, validate_check
from evaluations.actions.create_case import CreateCase
from evaluations.actions.update_case import UpdateCase
from evaluations.admin.docs import doc_link
from evaluations.checks import REGISTRY, describe_params, kinds_by_group
from evaluations.models import CaseVersion, Check, DatasetVersion
from sherlock.core import json_text
from sherlock.core.errors import ActionInvalid, InvalidFields, each_error, refusal_in
from sherlock.core.forms import offer, show_refusal
from sherlock.core.pickers import Picker

CHECKS_DOC_URL = reverse_lazy("admin:evaluations_check_docs", args=["checks"])


class JSONText(forms.JSONField):
    """A JSON field shown as an indented document; empty means `empty` ([] or {})."""

    def __init__(self, *, empty, **kwargs):
        self.empty = empty
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 4, "class": "vLargeTextField"}))
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if value in (None, "") or value == self.empty:
            return ""
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        if isinstance(value, list) and value:  # one item a line: a tool call, a trajectory step
            items = ",\n  ".join(json.dumps(item, ensure_ascii=False) for item in value)
            return f"[\n  {items}\n]"
        return json.dumps(value, indent=2, ensure_ascii=False)

    def clean(self, value):
        value = super().clean(value)
        return type(self.empty)() if value is None else value


class LinesField(forms.CharField):
    """A list of strings, one per line (and, with `commas`, also comma-separated)."""

    def __init__(self, *, commas=False, rows=4, **kwargs):
        self.commas = commas
        kwargs.setdefault("required", False)
        kwargs.setdefault("strip", False)
        attrs = {"rows": rows, "class": "vLargeTextField"}
        kwargs.setdefault("widget", forms.Textarea(attrs=attrs))
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, list):
            return "\n".join(str(item) for item in value)
        return value

    def to_python(self, value):
        text = super().to_python(value) or ""
        parts = re.split(r"[\n,]" if self.commas else r"\n", text)
        return [part.strip() for part in parts if part.strip()]


class DraftVersionField(forms.ModelChoiceField):
    """A draft the person may edit, typed and picked (`/pick/dataset-draft/`), never listed."""

    widget = Picker("dataset-draft", placeholder="type a dataset's slug or name")

    def label_from_instance(self, obj):
        return str(obj)


# --- cases ---------------------------------------------------------------------------------------


class CaseVersionForm(forms.ModelForm):
    """A case in a draft version: its key (typed when it is added, then fixed) and its content.

    `expected` is split into its parts (output text, table, chart, trajectory); keys the form
    does not know are kept as they are."""

    INPUT_FORMATS = [("text", "Plain text"), ("json", "JSON (a structured input)")]

    key = forms.SlugField(
        max_length=200,
        help_text="The case's stable id within the dataset (letters, digits, - and _), "
        "e.g. refund-over-limit. Kept across versions.",
    )
    input_format = forms.ChoiceField(
        choices=INPUT_FORMATS,
        initial="text",
        widget=forms.RadioSelect,
        label="Input is",
        help_text="Plain text for a question or task; JSON when the agent takes an object.",
    )
    input = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 4, "class": "vLargeTextField"}),
        help_text=doc_link(
            "What the agent is given: a question, a task, or a JSON document.",
            "The case",
            key="input",
        ),
    )
    expected_output = forms.CharField(
        required=False,
        strip=False,
        label="Expected output",
        widget=forms.Textarea(attrs={"rows": 3, "class": "vLargeTextField"}),
        help_text=doc_link(
            "The reference answer, plain text (read by completeness, context precision and "
            "recall, answer relevance overlap).",
            "The case",
            key="expected.output",
        ),
    )
    contexts = LinesField(
        label="Reference contexts",
        help_text=doc_link(
            "One context per line: the passages a good retrieval finds (context_*_overlap, "
            "faithfulness with contexts: reference).",
            "The case",
            key="contexts",
        ),
    )
    expected_tools = JSONText(
        empty=[],
        help_text=doc_link(
            'JSON list of tool calls, e.g. [{"name": "kb.search"}, {"name": "refund", '
            '"arguments": {"order": 1182}}] (read by tools_used when its params name no tools).',
            "The case",
            key="expected_tools",
        ),
    )
    expected_table = JSONText(
        empty={},
        help_text=doc_link(
            'JSON table, e.g. {"columns": ["region", "revenue"], "rows": [["north", 1204.5]]} '
            "(table_* checks).",
            "Tables",
        ),
    )
    expected_chart = JSONText(
        empty={},
        help_text=doc_link(
            'JSON Vega-Lite spec, e.g. {"mark": "bar"} (chart_type).',
            "Charts",
        ),
    )
    expected_trajectory = JSONText(
        empty=[],
        help_text=doc_link(
            'JSON list of tool calls in order, e.g. [{"name": "search", "arguments": {"q": "x"}}]'
            " (trajectory).",
            "The case",
            key="expected.trajectory",
        ),
    )
    outcome_check = JSONText(
        empty={},
        help_text=doc_link(
            "JSON outcome verifier run after the trial, e.g. "
            '{"kind": "python", "callable": "pkg.mod.fn"}; empty for none.',
            "Outcome verifiers (CaseVersion.outcome_check)",
            doc="contract",
        ),
    )
    tags = LinesField(
        commas=True,
        rows=2,
        help_text="One tag per line, or comma-separated, e.g. refunds, smoke.",
    )
    overrides = JSONText(
        empty={},
        help_text=doc_link(
            "JSON object of per-check overrides by check label, e.g. "
            '{"Latency": {"threshold": 0.5}, "Tools": {"disabled": true}}; each may set '
            "threshold, params, mode, disabled.",
            "Writing cases and checks in the admin",
            key="Overrides",
        ),
    )

    EXPECTED_PARTS = {
        "expected_table": "table",
        "expected_chart": "chart",
        "expected_trajectory": "trajectory",
    }

    class Meta:
        model = CaseVersion
        fields = ["dataset_version"]
        field_classes = {"dataset_version": DraftVersionField}

    user = None  # set by the admin (RefusalsMixin.get_form): whose drafts may be chosen

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        instance = self.instance
        if instance.pk:
            self.fields.pop("dataset_version", None)
            self.fields["key"].disabled = True
            self.fields["key"].help_text = "The case's stable id (fixed once the case exists)."
            self._load(instance)
        else:
            offer(self, "dataset_version", DatasetVersion.objects.drafts_to_edit(self.user))
            self.fields["dataset_version"].help_text = "A draft version you may edit."

    def _load(self, cv):
        expected = cv.expected if isinstance(cv.expected, dict) else {}
        structured = not isinstance(cv.input, str)
        output = expected.get("output", "")
        self.initial.update(
            key=cv.case.key,
            input_format="json" if structured else "text",
            input=json.dumps(cv.input, indent=2, ensure_ascii=False) if structured else cv.input,
            expected_output=output if isinstance(output, str) else json.dumps(output),
            contexts=cv.contexts,
            expected_tools=cv.expected_tools,
            outcome_check=cv.outcome_check,
            tags=cv.tags,
            overrides=cv.overrides,
            **{name: expected.get(part) for name, part in self.EXPECTED_PARTS.items()},
        )

    def clean(self):
        super().clean()
        cleaned = self.cleaned_data
        if cleaned.get("input_format") == "json" and "input" in cleaned:
            try:
                cleaned["input"] = json_text.loads(cleaned["input"])
            except ValueError as exc:
                self.add_error("input", f"input: not valid JSON ({exc}); or choose plain text")
        self._check_case(cleaned)
        return cleaned

    def _check_case(self, cleaned):
        """Every error of the case at once, each on its field, with the form's own (a key that
        is not a slug, JSON that does not parse): the rules of the case actions
        (`key_errors`, `content_errors`), applied to what the form could read, before the
        action applies them again when it saves. On a saved case only the fields that change
        are checked, as `UpdateCase` checks them."""
        instance = self.instance
        version = instance.dataset_version if instance.pk else cleaned.get("dataset_version")
        fields = self._content(cleaned)
        if instance.pk:
            fields = {k: v for k, v in fields.items() if getattr(instance, k) != v}
        errors = []
        if not instance.pk and "key" in cleaned:
            errors += key_errors(cleaned["key"], version)
        errors += content_errors(fields, list(version.checks.all()) if version else None)
        if errors:
            refused = InvalidFields(errors)
            if version is not None and (refusal := refusal_in(refused)) is not None:
                # An outcome verifier the egress rules refuse: audited as the case verbs audit
                # it through the API (`evaluations.case.refused`), though they never run here.
                action: UpdateCase | CreateCase
                if instance.pk:
                    action = UpdateCase(acting_user=self.user, case_version=instance)
                else:
                    action = CreateCase(
                        acting_user=self.user, dataset_version=version, key=cleaned.get("key")
                    )
                action.audit_refusal(refusal)
            show_refusal(self, refused, aliases=self.refusal_aliases())

    def _post_clean(self):
        # The case actions validate and write (uniqueness of the key, the content's shape);
        # the model's own validation of the form's one model field would only repeat them.
        pass

    def action_fields(self):
        """The content keywords of CreateCase / UpdateCase (CASE_FIELDS)."""
        fields = self._content(self.cleaned_data)
        assert set(fields) == set(CASE_FIELDS)
        return fields

    def _content(self, data):
        """The case's content from the form's cleaned `data`: every field whose form fields
        all cleaned (a field the form refused is left out)."""
        fields = {
            name: data[name]
            for name in (
                "input",
                "contexts",
                "expected_tools",
                "outcome_check",
                "tags",
                "overrides",
            )
            if name in data
        }
        if all(name in data for name in ("expected_output", *self.EXPECTED_PARTS)):
            stored = (self.instance.expected if self.instance.pk else None) or {}
            own = ("output", *self.EXPECTED_PARTS.values())
            expected = {k: v for k, v in stored.items() if k not in own}  # keys the form lacks
            if data["expected_output"]:
                expected["output"] = data["expected_output"]
            for name, part in self.EXPECTED_PARTS.items():
                if data[name]:
                    expected[part] = data[name]
            fields["expected"] = expected
        return fields

    def refusal_aliases(self):
        # A refusal of `expected` names the whole document; the parts are on the form.
        return {"expected": "expected_output"}


# --- checks --------------------------------------------------------------------------------------


def kind_choices():
    """The registry's kinds under the five groups of the seeds (`kinds_by_group`)."""
    return [
        (title, [(cls.kind, f"{cls.kind} — {cls.description}") for cls in kinds])
        for title, kinds in kinds_by_group()
    ]


class KindSelect(forms.Select):
    """The kind select, followed by each kind's params table (one shown at a time by
    static/evaluations/check_form.js, no request needed)."""

    def render(self, name, value, attrs=None, renderer=None):
        select = super().render(name, value, attrs, renderer)
        kinds = [
            {
                "kind": kind,
                "description": cls.description,
                "params": describe_params(kind),
                "uses_model": cls.uses_model,
                "needs": ", ".join(cls.needs),
            }
            for kind, cls in REGISTRY.items()
        ]
        tables = render_to_string(
            "admin/evaluations/widgets/kind_params.html",
            {"kinds": kinds, "current": value, "doc_url": CHECKS_DOC_URL},
        )
        # One block, so the admin's flex row puts the table under the select, not beside it.
        return mark_safe(f'<div class="kind-widget">{select}{tables}</div>')


class CheckForm(forms.ModelForm):
    """A check of a draft version: the kind from the registry (params described under it), the
    params as JSON, and for the custom check its criterion and the anchors of 0 and 1 in fields
    of their own (mapped into its params). The preview fields are not saved: they feed the
    preview (`CheckAdmin.preview_view`)."""

    criterion = forms.CharField(
        required=False,
        label="Criterion",
        widget=forms.Textarea(attrs={"rows": 3, "class": "vLargeTextField"}),
        help_text="Custom check only: what the judge grades, in plain language, e.g. "
        "\"Says 'member', never 'user'. Never promises a date.\" The check's label is its name.",
    )
    anchor_0 = forms.CharField(
        required=False,
        label="Score 0 means",
        widget=forms.TextInput(attrs={"class": "vLargeTextField"}),
        help_text="Custom check only: what an answer graded 0 looks like.",
    )
    anchor_1 = forms.CharField(
        required=False,
        label="Score 1 means",
        widget=forms.TextInput(attrs={"class": "vLargeTextField"}),
        help_text="Custom check only: what an answer graded 1 looks like.",
    )
    # The case's key, typed, not chosen from a list: a version may hold 10,000 cases, and a
    # select of them all made the check's page take seconds (`bench/pages_scale.py`).
    preview_case = forms.CharField(
        required=False,
        label="Case",
        widget=forms.TextInput(attrs={"class": "vTextField"}),
        help_text="The key of a case of this version to score against (its input, "
        "expectations); empty: none.",
    )
    preview_transcript = forms.CharField(
        required=False,
        label="Transcript",
        widget=forms.Textarea(attrs={"rows": 5, "class": "vLargeTextField"}),
        help_text=doc_link(
            'What the agent did, as JSON, e.g. {"output": "Refunded.", "tool_calls": '
            '[{"name": "refund"}], "latency_ms": 900}; or plain text, taken as the output.',
            "The transcript",
        ),
    )

    class Meta:
        model = Check
        fields = ["dataset_version", *CHECK_FIELDS]
        field_classes = {"dataset_version": DraftVersionField}
        help_texts = {
            "label": "The results column header, unique in the version. For a custom check, "
            "also its name (params.label).",
            "threshold": "Passes at score >= threshold (0 to 1); empty: the score is shown "
            "('scored'), never 'passed'.",
            "judge_model": "Model checks: the judge model; empty for the configured default.",
        }

    user = None  # set by the admin (RefusalsMixin.get_form): whose drafts may be chosen

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["kind"] = forms.ChoiceField(
            choices=[("", "---------"), *kind_choices()],
            widget=KindSelect,
            help_text="Grouped as in docs/checks.md; the params of the chosen kind are below.",
        )
        self.fields["params"] = JSONText(
            empty={},
            help_text=doc_link(
                "JSON object of the kind's params (table under Kind); empty for the defaults. "
                "For a custom check, criterion and anchors have their own fields.",
                "The kinds",
            ),
        )
        instance = self.instance
        version = None
        if instance.pk:
            self.fields.pop("dataset_version", None)
            version = instance.dataset_version
            self._load(instance)
        elif "dataset_version" in self.fields:
            offer(self, "dataset_version", DatasetVersion.objects.drafts_to_edit(self.user))
            version_id = self.data.get("dataset_version") or self.initial.get("dataset_version")
            version = DatasetVersion.objects.filter(pk=str(version_id or "0").strip()).first()
        self.preview_version = version
        if version is not None:
            first = version.case_versions.order_by("case__key").values_list("case__key")[:1]
            self.fields["preview_case"].widget.attrs["placeholder"] = next(
                (f"e.g. {key}" for (key,) in first), "this version has no case yet"
            )

    def _load(self, check):
        params = dict(check.params or {})
        if check.kind == "custom":
            anchors = params.get("anchors")
            if isinstance(anchors, dict) and set(anchors) <= {"0", "1"}:
                self.initial["anchor_0"] = anchors.get("0", "")
                self.initial["anchor_1"] = anchors.get("1", "")
                params.pop("anchors")
            self.initial["criterion"] = params.pop("criterion", "")
            params.pop("label", None)
        self.initial["params"] = params

    def clean_preview_case(self):
        """The case version of the typed key in the check's version, or None when empty."""
        key = (self.cleaned_data.get("preview_case") or "").strip()
        if not key:
            return None
        found = None
        if self.preview_version is not None:
            found = (
                self.preview_version.case_versions.select_related("case")
                .filter(case__key=key)
                .first()
            )
        if found is None:
            raise forms.ValidationError(f"No case with the key {key!r} in this version.")
        return found

    def clean_params(self):
        params = self.cleaned_data["params"]
        if not isinstance(params, dict):
            raise forms.ValidationError('params: must be a JSON object, e.g. {"max_ms": 2000}')
        return params

    def kind_params(self):
        """The params as the kind takes them: for the custom check, the label, criterion and
        anchors fields mapped in (`{"anchors": {"0": ..., "1": ...}}`)."""
        data = self.cleaned_data
        params = dict(data.get("params") or {})
        if data.get("kind") == "custom":
            params["label"] = data.get("label") or ""
            if data.get("criterion"):
                params["criterion"] = data["criterion"]
            anchors = {
                point: data[f"anchor_{point}"]
                for point in ("0", "1")
                if data.get(f"anchor_{point}")
            }
            if anchors:
                params["anchors"] = anchors
        return params

    def clean(self):
        super().clean()
        cleaned = self.cleaned_data
        if self.errors:
            self._check_the_rest(cleaned)
        return cleaned

    def _check_the_rest(self, cleaned):
        """With a field wrong the form is not saved, so the check verbs never see the others:
        their validation (`validate_check`: params against the kind's schema, the label's
        uniqueness) is asked here of what the form could read, nothing written, and each of
        its errors on a field that has none yet is shown beside the fields' own.
        A valid form is checked by the verb itself when it saves."""
        instance = self.instance
        fields = {n: cleaned[n] for n in CHECK_FIELDS if n in cleaned and n != "params"}
        fields["params"] = self.kind_params() if "params" in cleaned else {}
        draft = Check(
            pk=instance.pk,
            dataset_version=instance.dataset_version
            if instance.pk
            else cleaned.get("dataset_version"),
            **fields,
        )
        try:
            validate_check(draft)
        except ActionInvalid as exc:
            aliases = self.refusal_aliases()
            fresh = [
                e
                for e in each_error(exc)
                if (e.field or "").split(".")[0] in self.fields
                and (e.field or "").split(".")[0] not in self.errors
            ]
            if fresh:
                show_refusal(self, InvalidFields(fresh), aliases=aliases)

    def _post_clean(self):
        # The check actions run the model's validation on the row they write (params against
        # the kind's schema, the label's uniqueness); a refusal comes back through show_refusal.
        pass

    def action_fields(self):
        """The keywords of CreateCheck / UpdateCheck (CHECK_FIELDS)."""
        fields = {name: self.cleaned_data[name] for name in CHECK_FIELDS if name != "params"}
        fields["params"] = self.kind_params()
        return fields

    def refusal_aliases(self):
        custom = self.cleaned_data.get("kind") == "custom"

        def params_field(exc):
            # "params: criterion: is required" names a param; a custom check's own fields.
            inner = str(exc).removeprefix("params: ").split(":", 1)[0]
            if custom and inner == "criterion":
                return "criterion"
            if custom and inner.startswith("anchors"):
                return "anchor_1" if inner == "anchors.1" else "anchor_0"
            return "params"

        return {"params": params_field, "__all__": None}

    def preview_input(self):
        """(case, transcript) of the preview, or raise ValidationError naming the field."""
        case_version = self.cleaned_data.get("preview_case")
        case = case_version.as_check_input() if case_version else {}
        text = (self.cleaned_data.get("preview_transcript") or "").strip()
        if not text:
            raise forms.ValidationError({"preview_transcript": "Paste a transcript to score."})
        try:
            transcript = json.loads(text)
        except ValueError:
            transcript = {"output": text}  # plain text is the agent's answer
        return case, transcript
