"""A run's verdict under a publishing policy: the one function every surface asks.

The run page, the run list, the compare page and API, ``GET /api/v1/runs/{id}/verdict/``,
``manage.py evaluate`` and the publish decision (``governance.publishing.decision.decide``, which
the ``gate`` command and the publish page read) all reach a verdict through ``verdicts_of`` (runs
judged one by one) or ``gate_verdict`` (a publish request's gate runs judged together). Both
build the same ``Verdict`` by ``judge`` (``rule``), so no two surfaces can disagree on a run and
policy.

Evaluations may not import governance (the layers of pyproject.toml), so a policy reaches this
module as plain data, an ``AppliedThresholds`` (``evaluations.contract.applied``): its contract
``Thresholds`` (with ``requires_verified_outcomes``), its ``min_case_pass_rate`` and its name,
made by governance's ``policy_thresholds``/``policy_applied`` from the ``PublishingPolicy``
row. Without one, the defaults apply and the verdict says so (``policy`` is null).

The verdict, in order:

- **pending** while a run has not finished (numbers from it are not evidence), exit code null;
- **incomplete** (exit 2) when a run failed or was cancelled, or when nothing failed but some
  evidence could not be had: blocking check results skipped or in error, trials in error
  (the ``checks_scored`` gate). A trial in error has no cost to record, so under a policy
  that requires coverage it also fails the coverage gate; when those trials are all that
  coverage lacks, that failure is the same missing evidence, not a failure of the agent
  (``rule``): the verdict is incomplete;
- **failed** (exit 1) when any other gate fails: the contract's (coverage, false success,
  unknown effects, floors, budget, quality) or the policy's case pass rate;
- **passed** (exit 0) otherwise.

``missing`` names the evidence the run lacks, whatever the outcome, each with what to do and
where it is documented: outcome verification (cases without an outcome verifier), a judge
(blocking model checks skipped: ``evaluations.judge.setup.NO_JUDGE``), a quality grader under
a quality floor, billing. Missing evidence fails the verdict only where the policy asks for it
(docs/contract.md, "A dataset without outcome verifiers").

A constant number of queries for any number of runs: the thresholds provider (one), the runs'
stored figures (``runs_totals``, ``trials_in_error``), one grouped query for the unscored
results of runs without figures, and, only when some run has them, two grouped counts: of the
errored trials (their cases, and how many have no billed cost), and of the cases with
unscored results.

The package, by job: `model` (what a verdict is), `rule` (the one rule), `gates`, `cases`
(what is read of the runs), `missing` (evidence lacking) and `fixes` (what fixes a gate).
"""

from evaluations.contract import DEFAULT_APPLIED
from evaluations.verdict.model import (
    EXIT_CODES,
    FAILED,
    INCOMPLETE,
    OUTCOMES,
    PASSED,
    PENDING,
    POLICY_GATE_LABELS,
    Gate,
    Missing,
    Reason,
    Verdict,
    doc_url,
    gate_label,
)
from evaluations.verdict.rule import gate_verdict, run_verdict, verdicts_of

__all__ = [
    "DEFAULT_APPLIED",
    "EXIT_CODES",
    "FAILED",
    "INCOMPLETE",
    "OUTCOMES",
    "PASSED",
    "PENDING",
    "POLICY_GATE_LABELS",
    "Gate",
    "Missing",
    "Reason",
    "Verdict",
    "doc_url",
    "gate_label",
    "gate_verdict",
    "run_verdict",
    "verdicts_of",
]
