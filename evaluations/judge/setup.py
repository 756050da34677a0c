"""What Sherlock says when no judge is configured: one sentence, said the same everywhere.

Saving a blocking model check (the admin's message, the checks API's `warnings`), its preview,
every estimate (the *Start a run* form on /runs/, the admin's, the API's, `manage.py evaluate`,
schedules), the run banner, the verdict's missing `judge` evidence and the labelling queue's
empty state all say `NO_JUDGE`, with the setting to change, and the pages link to
docs/judges.md (`judges_docs_url`). Written once here so that they cannot drift apart.
"""

from django.conf import settings

NO_JUDGE = (
    "No judge is configured, so model checks are skipped, never passed: set "
    "SHERLOCK_JUDGE_BASE_URL (and SHERLOCK_JUDGE_MODEL) to an OpenAI-compatible server and "
    "restart Sherlock (docs/judges.md)."
)


def judge_configured() -> bool:
    return bool(settings.SHERLOCK_JUDGE_BASE_URL)


def judge_named() -> str:
    """The configured judge in words, "the judge at <URL> (model <M>)", without any
    user:password the URL may hold; "" when none is configured."""
    # Imported here: a cycle: evaluations.models imports this module (NO_JUDGE), and what is
    # imported here imports the models.
    from evaluations.judge.probe import shown_url

    if not judge_configured():
        return ""
    return (
        f"the judge at {shown_url(settings.SHERLOCK_JUDGE_BASE_URL)} "
        f"(model {settings.SHERLOCK_JUDGE_MODEL})"
    )


def no_judge_sentence() -> str:
    """`NO_JUDGE`: the sentence."""
    return NO_JUDGE


def no_judge_warning(labels, configured=None) -> str:
    """The warning for blocking model checks `labels` under no judge, or "" with a judge
    (`configured`: as already known, else read from the settings)."""
    configured = judge_configured() if configured is None else configured
    if configured or not labels:
        return ""
    return f"Blocking model checks cannot be scored: {', '.join(labels)}. {NO_JUDGE}"


def check_warning(check) -> str:
    """The warning for saving `check` (admin, API): the no-judge sentence when it is a
    blocking model check and no judge is configured, else ""."""
    # Imported here: a cycle: evaluations.models imports this module (NO_JUDGE), and what is
    # imported here imports the models.
    from evaluations.checks import REGISTRY
    from evaluations.choices import CheckMode

    if check.mode != CheckMode.BLOCKING or not getattr(
        REGISTRY.get(check.kind), "uses_model", False
    ):
        return ""
    return no_judge_warning([check.label])


def preview_warning(kind) -> str:
    """The preview's warning: a model check previewed with no judge is skipped, and says why
    and what to set."""
    # Imported here: a cycle: evaluations.models imports this module (NO_JUDGE), and what is
    # imported here imports the models.
    from evaluations.checks import REGISTRY

    if judge_configured() or not getattr(REGISTRY.get(kind), "uses_model", False):
        return ""
    return NO_JUDGE


def no_judge_skips(reasons) -> str:
    """`NO_JUDGE` when no judge is configured and one of `reasons` (of skipped results) is the
    judge's absence, else "": the run banner's line."""
    if judge_configured():
        return ""
    return NO_JUDGE if any("judge" in (reason or "") for reason in reasons) else ""


def judges_docs_url() -> str:
    """The served page of docs/judges.md (its settings table)."""
    # Imported here: a cycle: evaluations.models imports this module (NO_JUDGE), and what is
    # imported here imports the models.
    from evaluations.admin.docs import doc_url

    return doc_url("judges")
