"""AddTraceToDataset: an Editor makes a production trace a case of a draft dataset version.

The case is created by the case verb itself (`evaluations.actions.create_case.CreateCase`): the
Editor role on the dataset, a draft version, the case's validation and its audit entry
(`evaluations.case.create`) are that verb's. What a trace gives the case: its input and its
provenance, the tag `trace:<trace id>` (a case outlives the trace, which retention deletes).
The expected output is left to the Editor: what the agent answered in production is what is
being judged, not the reference. So are the contexts: what production *retrieved* is not what
*should* have been retrieved, so it becomes the case's reference contexts only when the Editor
says so (`contexts_as_reference`); otherwise it is kept, as retrieved, in the audit entry.
This verb records `production.trace.add_to_dataset` beside the case's entry, naming the trace,
its agent and the case, so the audit log says where the case came from after the trace is
gone.
"""

from evaluations.actions.create_case import CreateCase
from sherlock.core.actions import Action
from sherlock.core.errors import ActionConflict, ActionDenied
from sherlock.core.permissions import user_can

PROVENANCE_TAG = "trace:{}"
TAGS = ["production"]
RETRIEVED_KEPT = 20  # the retrieved contexts the audit entry keeps


def default_key(trace):
    return f"trace-{trace.trace_id[:16]}"


class AddTraceToDataset(Action):
    """Create a case from a completed (or incomplete) trace in a draft dataset version."""

    noun = "trace"
    verb = "add_to_dataset"

    def __init__(
        self, *, acting_user, trace, dataset_version, key=None, contexts_as_reference=False
    ):
        super().__init__(acting_user=acting_user)
        self.trace = trace
        self.dataset_version = dataset_version
        self.key = key or default_key(trace)
        self.contexts_as_reference = bool(contexts_as_reference)

    def check(self):
        if not user_can(self.acting_user, "view", self.trace.agent):
            raise ActionDenied("You may not see this trace's agent.")
        if not user_can(self.acting_user, "edit", self.dataset_version.dataset):
            raise ActionDenied("You may not edit cases of this dataset (Editor role needed).")
        if self.trace.transcript is None:
            raise ActionConflict(
                "This trace is still open: its trial is built when it completes.",
                code="trace_open",
            )

    def perform(self):
        transcript = self.trace.transcript or {}
        contexts = [c for c in transcript.get("contexts") or [] if isinstance(c, str)]
        case_version = CreateCase(
            acting_user=self.acting_user,
            dataset_version=self.dataset_version,
            key=self.key,
            input=transcript.get("input", ""),
            contexts=contexts if self.contexts_as_reference else [],
            tags=[*TAGS, PROVENANCE_TAG.format(self.trace.trace_id)],
        ).execute_in_transaction()
        self.audit(
            target=self.trace,
            after={
                "trace_id": self.trace.trace_id,
                "agent": self.trace.agent.slug,
                "dataset_version": self.dataset_version.pk,
                "case": self.key,
                "case_version": case_version.pk,
                "retrieved_contexts": contexts[:RETRIEVED_KEPT],
                "contexts_as_reference": self.contexts_as_reference,
            },
        )
        return case_version
