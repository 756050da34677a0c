"""The run page's "Summarise with the judge" button (`POST /runs/<id>/summary/`): calls
`SummarizeRun` and goes back to the run page, where the summary or the refusal is shown
(templates/evaluations/partials/run_summary.html)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from evaluations.actions.summarize_run import SummarizeRun
from evaluations.models import Run
from sherlock.core.errors import ActionError
from sherlock.core.hidden import visible_or_404


@login_required
@require_POST
def summarize(request, pk):
    run = visible_or_404(
        request,
        Run.objects.for_user(request.user).select_related(
            "agent_version__agent", "dataset_version__dataset"
        ),
        pk=pk,
    )
    try:
        SummarizeRun(acting_user=request.user, run=run).execute()
    except ActionError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Summary written.")
    return redirect("evaluations:run-detail", pk=pk)
