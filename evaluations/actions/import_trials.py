"""ImportTrials: trial records from elsewhere become an external run of an agent version.

A trial file (JSON Lines, a JSON array, or `{"thresholds", "trials"}`) is stored as a run with
purpose `external`, and gets the same measures, gates and comparison as a run Sherlock executed.

- Atomic: every record is checked first; the first bad one is refused naming its line or place
  (`trials[3]`), and nothing is saved.
- Cases: a record's `task` (else its `trial_id`) is its case, records of one task its
  repetitions. With `dataset`, tasks must be case keys of its latest frozen version; without,
  the agent's `external-<agent>` dataset is used (a new frozen version when the tasks differ,
  with an informative quality-grader check holding the imported scores).
- Quality is stored as a result of the quality grader; `cost.usd` is the trial's whole cost,
  with its billing coverage; no judge call is invented for it.
- No blocking check ran, so the run's case pass rate is None and a release decision on it
  fails closed there. A file of several variants needs `variant` to pick one.
- No `run_finished` is sent: an external run is evidence to compare and gate on explicitly,
  not a gate run a publish request waits for. docs/contract.md, "Stored runs, imported trials
  and the decision".
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from typing import Any

from django.utils import timezone
from django.utils.text import slugify

from evaluations.actions.create_dataset import create_owned_dataset
from evaluations.choices import CheckMode, CheckStatus, RunPurpose, RunStatus, TrialStatus
from evaluations.contract import (
    ContractInputError,
    load_document,
    read_trial,
    trial_counts,
)
from evaluations.engine import compute_case_results
from evaluations.models import (
    Case,
    CaseVersion,
    Check,
    CheckResult,
    Dataset,
    DatasetVersion,
    Run,
    Trial,
)
from sherlock.core.actions import Action
from sherlock.core.errors import ActionDenied, ActionInvalid
from sherlock.core.permissions import user_can

IMPORTED_GRADER_LABEL = "Task quality (imported)"


def _plain(value: Any) -> Any:
    """JSON-storable: the parser reads numbers as Decimal (exact money); JSONField wants float."""
    if isinstance(value, Decimal):  # only JSON fractions are parsed as Decimal; ints stay int
        return float(value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def case_key(record: dict) -> str:
    """The case a record belongs to: its task, else its trial id, as a slug (<= 200 chars)."""
    task = record.get("task")
    source = task if isinstance(task, str) and task.strip() else str(record.get("trial_id"))
    return slugify(source)[:200] or "task"


class ImportTrials(Action):
    """Store the trial records of ``text`` as a completed external run of ``agent_version``.

    ``acting_user`` None is the system (an operator's management command); a user needs the
    Builder right on the agent, as for starting a run.
    """

    noun, verb = "run", "import"

    def __init__(self, *, acting_user, agent_version, text, dataset=None, variant=None):
        super().__init__(acting_user=acting_user)
        self.agent_version = agent_version
        self.text = text
        self.dataset = dataset
        self.variant = variant

    def check(self):
        user = self.acting_user
        if user is not None and not user_can(user, "build", self.agent_version.agent):
            raise ActionDenied("You may not import runs of this agent (Builder role needed).")

    def perform(self):
        records = self._read()
        dataset_version, grader = self._dataset_version(records)
        cases = {
            cv.case.key: cv
            for cv in CaseVersion.objects.filter(dataset_version=dataset_version).select_related(
                "case"
            )
        }
        now = timezone.now()
        repetitions: Counter[Any] = Counter()
        trials = []
        for where, raw, record in records:
            key = case_key(raw)
            case_version = cases.get(key)
            if case_version is None:
                raise ActionInvalid(
                    f"{where}: task {key!r} is not a case of {dataset_version}", field="file"
                )
            repetitions[key] += 1
            if record.grader_ran and grader is None:
                raise ActionInvalid(
                    f"{where}: {dataset_version} names no quality grader check to hold the "
                    "imported quality score",
                    field="file",
                )
            trials.append(
                (raw, record, self._trial(raw, record, case_version, repetitions[key], now))
            )

        run = Run.objects.create(
            agent_version=self.agent_version,
            dataset_version=dataset_version,
            repetitions=max(repetitions.values()),
            purpose=RunPurpose.EXTERNAL,
            status=RunStatus.COMPLETED,
            requested_by=self.acting_user,
            trials_total=len(trials),
            trials_done=len(trials),
            spend_usd=sum((r.cost_usd for _, r, _ in trials if r.cost_usd is not None), Decimal(0)),
            comparability=_comparability(dataset_version),
            started_at=now,
            finished_at=now,
            finalized_at=now,
        )
        for _, _, trial in trials:
            trial.run = run
        Trial.objects.bulk_create([trial for _, _, trial in trials])
        if grader is not None:
            CheckResult.objects.bulk_create(
                self._quality_result(trial, record, grader) for _, record, trial in trials
            )

        summary = compute_case_results(run)
        # No blocking check ran on imported trials: a pass rate would pass by default.
        summary.update(case_pass_rate=None, passed=None, failed=None, imported=True)
        Run.objects.filter(pk=run.pk).update(summary=summary)
        run.summary = summary
        self.audit(
            target=run,
            after={
                "agent_version": self.agent_version.pk,
                "dataset_version": dataset_version.pk,
                "trials": len(trials),
                "variant": records[0][2].variant,
            },
        )
        return run

    def _read(self):
        try:
            document = load_document(self.text)
        except ContractInputError as exc:
            raise ActionInvalid(str(exc), field="file") from None
        if not document.trials:
            raise ActionInvalid("the file has no trials", field="file")
        records: list[Any] = []
        seen: dict[Any, Any] = {}
        for raw, where in zip(document.trials, document.locations, strict=True):
            try:
                record = read_trial(raw, where)
            except ContractInputError as exc:
                raise ActionInvalid(str(exc), field="file") from None
            if record.trial_id in seen:
                raise ActionInvalid(
                    f"{where}: trial id {record.trial_id!r} repeats {seen[record.trial_id]}",
                    field="file",
                )
            seen[record.trial_id] = where
            records.append((where, raw, record))
        variants = list(dict.fromkeys(record.variant for _, _, record in records))
        if self.variant is not None:
            records = [item for item in records if item[2].variant == self.variant]
            if not records:
                raise ActionInvalid(
                    f"no trial of variant {self.variant!r}; the file has: {', '.join(variants)}",
                    field="variant",
                )
        elif len(variants) > 1:
            raise ActionInvalid(
                f"the file holds several variants ({', '.join(variants)}); choose one",
                field="variant",
            )
        return records

    def _dataset_version(self, records):
        """The frozen dataset version the trials belong to, and its quality grader (or None)."""
        if self.dataset is not None:
            version = self.dataset.latest_frozen
            if version is None:
                raise ActionInvalid(
                    f"dataset {self.dataset} has no frozen version", field="dataset"
                )
            return version, version.checks.filter(quality_grader=True).first()

        keys = list(dict.fromkeys(case_key(raw) for _, raw, _ in records))
        agent = self.agent_version.agent
        slug = f"external-{agent.slug}"[:100]
        # Owned by whoever imports, or by the agent's owner when the system does (a command).
        dataset = Dataset.objects.filter(slug=slug).first() or create_owned_dataset(
            self.acting_user or agent.owner,
            actor=self.acting_user,
            slug=slug,
            name=f"External trials of {agent.name}"[:200],
            description="Cases of trial records imported with import_trials.",
        )
        latest = dataset.latest_frozen
        if latest is not None:
            latest_keys = set(latest.case_versions.values_list("case__key", flat=True))
            grader = latest.checks.filter(quality_grader=True).first()
            if latest_keys == set(keys) and grader is not None:
                return latest, grader
        return self._new_external_version(dataset, keys, records)

    def _new_external_version(self, dataset, keys, records):
        number = (
            dataset.versions.order_by("-number").values_list("number", flat=True).first() or 0
        ) + 1
        now = timezone.now()
        version = DatasetVersion.objects.create(
            dataset=dataset,
            number=number,
            note="Imported trial records",
            frozen_at=now,
            frozen_by=self.acting_user,
        )
        graders = {
            (raw.get("quality") or {}).get("grader")
            for _, raw, _ in records
            if isinstance(raw.get("quality"), dict)
        } - {None}
        grader = Check(
            dataset_version=version,
            label=IMPORTED_GRADER_LABEL,
            kind="custom",
            params={
                "criterion": "Imported task-quality score"
                + (f" ({', '.join(sorted(map(str, graders)))})" if graders else "")
            },
            mode=CheckMode.INFORMATIVE,
            quality_grader=True,
        )
        grader.clean()
        grader.save()
        tasks: dict[Any, Any] = {}
        for _, raw, _ in records:
            tasks.setdefault(case_key(raw), raw.get("task") or raw.get("trial_id"))
        for key in keys:
            case, _ = Case.objects.get_or_create(dataset=dataset, key=key)
            CaseVersion.objects.create(
                dataset_version=version, case=case, input=str(tasks[key]), tags=["imported"]
            )
        self.audit(
            noun="dataset_version",
            target=version,
            after={"frozen_at": now, "cases": len(keys)},
        )
        return version, grader

    def _trial(self, raw, record, case_version, repetition, now):
        outcome = raw.get("outcome") if isinstance(raw.get("outcome"), dict) else {}
        evidence = {key: value for key, value in outcome.items() if key != "verdict"}
        return Trial(
            case_id=case_version.case_id,
            case_version=case_version,
            repetition=repetition,
            status=TrialStatus.COMPLETED,
            transcript={
                "imported": {
                    "trial_id": record.trial_id,
                    "variant": record.variant,
                    "task": _plain(raw.get("task")),
                }
            },
            cost_usd=record.cost_usd,
            billing_coverage=record.billing_coverage,
            declared_complete=record.declared_complete,
            outcome_verdict=record.outcome_verdict or "",
            outcome_evidence=_plain(evidence),
            progress=_plain(raw.get("progress") or {}),
            wait=_plain(raw.get("wait")),
            tool_effects=_plain(raw.get("tool_effects") or []),
            started_at=now,
            finished_at=now,
            **trial_counts(record),
        )

    def _quality_result(self, trial, record, grader):
        if record.grader_ran:
            score = float(record.quality_score)
            status = (
                CheckStatus.SCORED
                if grader.threshold is None
                else CheckStatus.PASSED
                if score >= grader.threshold
                else CheckStatus.FAILED
            )
            reason = "imported quality score"
        else:
            score, status, reason = None, CheckStatus.SKIPPED, "the grader did not run (imported)"
        return CheckResult(
            trial=trial,
            check_config=grader,
            score=score,
            status=status,
            blocking=False,
            threshold=grader.threshold,
            reason=reason,
            evidence={"imported": True},
        )


def _comparability(dataset_version) -> dict:
    checks = list(dataset_version.checks.all())
    return {
        "dataset_version": dataset_version.pk,
        "dataset_frozen": dataset_version.is_frozen,
        "checks": {check.label: check.version_hash for check in checks},
        # Imported scores came from the grader named in the records, not from a judge of ours.
        "judge_models": [],
        "imported": True,
    }
