"""Models of the evaluations app, re-exported here: import from `evaluations.models`."""

from evaluations.models.datasets import Case, CaseVersion, Check, Dataset, DatasetVersion
from evaluations.models.judging import CostEntry, DailyCost, JudgeCall, JudgeProbe, ModelPrice
from evaluations.models.runs import (
    CaseResult,
    CheckResult,
    ContractEvidence,
    HumanLabel,
    Run,
    Trial,
    case_counts_words,
)
from evaluations.models.schedules import RunSchedule

__all__ = [
    "Case",
    "CaseResult",
    "case_counts_words",
    "CaseVersion",
    "Check",
    "CheckResult",
    "ContractEvidence",
    "CostEntry",
    "DailyCost",
    "Dataset",
    "DatasetVersion",
    "HumanLabel",
    "JudgeCall",
    "JudgeProbe",
    "ModelPrice",
    "Run",
    "RunSchedule",
    "Trial",
]
