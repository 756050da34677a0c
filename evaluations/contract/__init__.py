"""The five-metric release contract for tool-using agents: five measures kept apart and never
averaged (task quality, useful progress, tool-effect integrity, cost per verified outcome,
false-success rate), each with its numerator, denominator and evidence coverage, and gates in a
fixed order (coverage, false success, unknown effects, floors, budget, quality), every one
evaluated after the first that fails, so a reviewer sees all that is wrong at once.

`accumulate(trials)` reads trial records into one `VariantTotals` per variant (counts and exact
sums); `evaluate(totals, thresholds)` turns them into the measures and gates without looking at
a trial, so database aggregates feed it the same (`compute_contract` chains the two,
`render_table` prints the table, `ContractResult.as_dict` is `manage.py contract --json`). The
modules follow the data: `inputs` (thresholds, trial records and files), `totals`, `measures`,
`table`, `db` (stored runs; imported from `evaluations.contract.db`), `applied` (the thresholds
a run is shown under outside the gate). Import the rest from `evaluations.contract`.

The measures, the two shapes of thresholds, the rounding and why: docs/contract.md, "How the
measures are computed".
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
