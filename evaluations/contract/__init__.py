"""The five-metric release contract for tool-using agents.

The contract replaces "one composite score" with five measures that are kept separate and never
averaged, each with its own numerator, denominator and evidence coverage:

=========================  =============================================  ========================
measure                    numerator / denominator                        kept separately
=========================  =============================================  ========================
task quality               sum of scores / trials where the grader ran    graded vs declared
useful progress            windows with an evidence delta / active        owned-wait windows,
                           windows                                        stale-collector windows
tool-effect integrity      verified / (verified + failed + unknown)       intentionally denied
cost per verified outcome  covered (billed) agent + judge cost /          estimated cost, missing
                           outcomes verified at the destination           billing coverage
false-success rate         declared completions whose outcome failed /    unverified completions
                           all declared completions                       (verdict unavailable)
=========================  =============================================  ========================

Reading a trial record ("count useful progress during the active windows before the
wait, then stop the active progress clock"): ``progress.active_windows`` are the windows the
agent was working, ``progress.excluded_wait_windows`` the windows spent inside a wait. They
are excluded only when the wait is owned (it names an owner, the decision requested, a
deadline and whether the run can resume); an unowned wait, or wait windows with no wait at
all, is a stall, and its windows are added to the active windows with no evidence delta.
``stale_collector_windows`` are in neither count and are reported apart. A trial's
``cost.usd`` is its whole cost, agent and judge; only ``billed`` cost is covered cost.

The contract's gates come in a fixed order: coverage, false success, unknown
effects, floors (useful progress and tool-effect integrity), budget, then quality (only when
the thresholds set a quality floor). The result names the first failing gate and still
evaluates and reports every later one, so a reviewer sees all that is wrong at once.

The contract knows thresholds, never a publishing policy: the release decision, which turns a
policy into ``Thresholds`` once, applies them to a version's gate runs, adds the policy's other
gates and stores the snapshot, is governance's (``governance.publishing.decision``).

The computation is split in two so that the platform can feed it from the database:

1. ``accumulate(trials)`` reads trial records (the trial-record import/export format,
   docs/contract.md)
   into one ``VariantTotals`` per variant: plain counts and exact sums, nothing derived. The
   per-trial judgements (is this wait owned? is this cost billed?) happen here, once.
2. ``evaluate(totals, thresholds)`` turns one ``VariantTotals`` into the five measures and the
   gates under ``Thresholds`` read once by ``parse_thresholds``. It never looks at a trial, so
   the same totals computed with database aggregates (``Count``/``Sum`` with filters over
   ``Trial``) give the same result.

``compute_contract(trials, thresholds)`` chains the two; ``render_table`` prints the table of
docs/contract.md; ``ContractResult.as_dict`` is the JSON shape of ``manage.py contract --json``.
Import everything from ``evaluations.contract``; the modules follow the data, one per step:

- ``inputs``: thresholds (``parse_thresholds``), trial records (``read_trial``) and trial
  files (``load_document``), checked on the way in;
- ``totals``: ``accumulate``/``add_trial`` -> ``VariantTotals``;
- ``measures``: ``evaluate`` -> ``ContractResult`` (measures, gates, verdict);
- ``table``: ``format_cells``/``render_table``, the contract table (docs/contract.md);
- ``db``: the same from stored runs (``run_contract``, ``runs_contract``, ``runs_totals``;
  imported from ``evaluations.contract.db``, as it reads the database);
- ``applied``: the thresholds a run's contract is shown under outside the gate
  (``applied_thresholds``/``thresholds_for``: those of the publishing policy in force, through
  the one hook governance fills, else ``DEFAULT_THRESHOLDS``, and ``AppliedThresholds.source``
  says which).

Thresholds (``parse_thresholds``) come in one of two shapes, never mixed:

==============================================  ===========================================
publishing policy field                         trial-file "thresholds" object
==============================================  ===========================================
``max_false_successes`` (int, required)          ``false_success_max_count``
``max_unknown_effects`` (int, required)          ``unknown_tool_effects_max_count``
``min_useful_progress`` (0..1 or None)           ``useful_progress_min``
``min_tool_effect_integrity`` (0..1 or None)     ``tool_effect_integrity_min``
``max_cost_per_verified_outcome_usd`` (or None)  ``cost_per_verified_outcome_max_usd``
``min_quality`` (0..1 or None, optional)         ``quality_min`` (a Sherlock extension)
``coverage_required`` (bool, default True)       ``coverage`` object present -> True;
                                                 ``"coverage": false`` or null -> False
(not a policy field; 30)                         ``interval_reporting.wilson_95_when_n_at_least``
==============================================  ===========================================

``gate_order`` and ``rounding`` in the file format are informational: the order and the
rounding are fixed by the contract and are not configurable. A threshold set to None means "this
policy sets no such limit"; that is a policy choice, not missing evidence, so the limit passes
and says so. Missing *evidence* always fails closed: a gate whose number cannot be computed
fails (no verified outcome -> no cost per verified outcome -> the budget gate fails; a quality
floor with no graded trial fails).

Numbers. Scores and money are read as ``Decimal`` (floats through ``repr``, so 0.44 is 0.44 and
not its binary neighbour), summed exactly and rounded once, half-up, at the end: quality to
3 decimals, money to cents ("half-up; quality to 3 decimals, money to cents"). For
inputs given in cents and thousandths this is the same as integer cents/thousandths; for
sub-cent token costs it avoids rounding every trial before the sum. Ratios (floors) are
compared exactly as fractions; the budget and quality gates compare the rounded figures that
are shown, so the gate and the table never disagree. Raw counts are always reported; a Wilson
95 % interval is added when n >= 30 (five trials are 0/5, not proof of a zero rate).
"""

from evaluations.contract.applied import (
    DEFAULT_APPLIED,
    DEFAULTS_SOURCE,
    AppliedThresholds,
    applied_thresholds,
    policy_by_id,
    register_policy_lookup,
    register_thresholds_provider,
    thresholds_for,
    thresholds_provider,
)
from evaluations.contract.inputs import (
    DEFAULT_THRESHOLDS,
    THRESHOLD_FIELDS,
    ContractInputError,
    Thresholds,
    ThresholdsError,
    TrialDocument,
    TrialRecord,
    TrialRecordError,
    load_document,
    parse_thresholds,
    read_trial,
    wait_is_owned,
)
from evaluations.contract.measures import (
    CENT,
    FAIL,
    GATE_LABELS,
    GATE_ORDER,
    NOT_APPLICABLE,
    PASS,
    THOUSANDTH,
    ContractResult,
    GateResult,
    Ratio,
    compute_contract,
    evaluate,
    round_half_up,
    wilson_interval,
)
from evaluations.contract.table import TABLE_COLUMNS, format_cells, page_columns, render_table
from evaluations.contract.totals import (
    COUNT_FIELDS,
    VariantTotals,
    accumulate,
    add_trial,
    combine,
    trial_counts,
)

__all__ = [
    "CENT",
    "COUNT_FIELDS",
    "DEFAULTS_SOURCE",
    "DEFAULT_APPLIED",
    "DEFAULT_THRESHOLDS",
    "FAIL",
    "GATE_LABELS",
    "GATE_ORDER",
    "NOT_APPLICABLE",
    "PASS",
    "THRESHOLD_FIELDS",
    "TABLE_COLUMNS",
    "THOUSANDTH",
    "AppliedThresholds",
    "ContractInputError",
    "ContractResult",
    "GateResult",
    "Ratio",
    "Thresholds",
    "ThresholdsError",
    "TrialDocument",
    "TrialRecord",
    "TrialRecordError",
    "VariantTotals",
    "accumulate",
    "add_trial",
    "applied_thresholds",
    "combine",
    "compute_contract",
    "evaluate",
    "format_cells",
    "page_columns",
    "load_document",
    "parse_thresholds",
    "policy_by_id",
    "read_trial",
    "register_policy_lookup",
    "register_thresholds_provider",
    "render_table",
    "round_half_up",
    "thresholds_for",
    "thresholds_provider",
    "trial_counts",
    "wait_is_owned",
    "wilson_interval",
]
