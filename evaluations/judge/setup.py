"""What Sherlock says when no judge is configured: one sentence, said the same everywhere.

Saving a blocking model check (admin, API, page), its preview, every estimate (the *Start a
run* page, the admin, the API, `manage.py evaluate`, schedules), the run banner and the verdict's
missing evidence all say `NO_JUDGE` with the setting to change, and link to docs/judges.md
(`judges_docs_url`). Written once here so that they cannot drift apart.
"""

from django.conf import settings

NO_JUDGE = (
    "No judge is configured, so model checks are skipped, never passed: set "
    "SHERLOCK_JUDGE_BASE_URL (and SHERLOCK_JUDGE_MODEL) to an OpenAI-compatible server and "
    "restart Sherlock (docs/judges.md)."
)
NO_JUDGE_FIX = (
    "Set SHERLOCK_JUDGE_BASE_URL (and SHERLOCK_JUDGE_MODEL) to an OpenAI-compatible server "
    "and restart Sherlock"
)


def judge_configured() -> bool:
    return bool(settings.SHERLOCK_JUDGE_BASE_URL)


def no_judge_sentence() -> str:
    """`NO_JUDGE`: the sentence."""
    return NO_JUDGE


def no_judge_warning(labels) -> str:
    """The warning for blocking model checks `labels` under no judge, or "" with a judge."""
    if judge_configured() or not labels:
        return ""
    return f"Blocking model check(s) {', '.join(labels)} cannot be scored. {NO_JUDGE}"


def no_judge_skips(reasons) -> str:
    """`NO_JUDGE` when no judge is configured and one of `reasons` (of skipped results) is the
    judge's absence, else "": the run banner's line."""
    if judge_configured():
        return ""
    return NO_JUDGE if any("judge" in (reason or "") for reason in reasons) else ""


def judges_docs_url() -> str:
    """The served page of docs/judges.md (its settings table)."""
    from evaluations.admin.docs import doc_url

    return doc_url("judges")
