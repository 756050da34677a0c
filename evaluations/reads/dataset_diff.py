"""What changed between two versions of a dataset: cases added, removed and changed field by
field, and the same for checks (by label). Served by `GET /api/v1/datasets/{slug}/diff/` and
the admin's "Compare versions" page; four queries whatever the sizes."""

from evaluations.actions.case_fields import CASE_FIELDS
from evaluations.actions.check_fields import CHECK_FIELDS
from evaluations.cases_io import case_dicts


def _changes(before, after, names):
    return {
        name: {"a": before.get(name), "b": after.get(name)}
        for name in names
        if before.get(name) != after.get(name)
    }


def _compare(old, new, names, ident):
    changed = []
    unchanged = 0
    for key in sorted(set(old) & set(new)):
        fields = _changes(old[key], new[key], names)
        if fields:
            changed.append({ident: key, "fields": fields})
        else:
            unchanged += 1
    return {
        "added": sorted(set(new) - set(old)),
        "removed": sorted(set(old) - set(new)),
        "changed": changed,
        "unchanged": unchanged,
    }


def _checks(version):
    return {
        check.label: {name: getattr(check, name) for name in CHECK_FIELDS}
        for check in version.checks.all()
    }


def diff_versions(a, b):
    """`a` the baseline, `b` the newer version (any two versions of one dataset):
    `{"a", "b", "cases": {added, removed, changed, unchanged}, "checks": {...}}`, where each
    changed item names its key (or label) and `fields: {name: {"a": old, "b": new}}`."""
    if a.dataset_id != b.dataset_id:
        raise ValueError("the two versions belong to different datasets")
    cases_a = {case.pop("key"): case for case in case_dicts(a)}
    cases_b = {case.pop("key"): case for case in case_dicts(b)}
    return {
        "a": a.number,
        "b": b.number,
        "cases": _compare(cases_a, cases_b, CASE_FIELDS, "key"),
        "checks": _compare(
            _checks(a), _checks(b), [n for n in CHECK_FIELDS if n != "label"], "label"
        ),
    }
