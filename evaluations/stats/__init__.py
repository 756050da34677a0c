"""The statistics a release gate reads, as glue over scipy: intervals for a pass rate (Wilson;
clustered by case when repetitions of one case are not independent), the paired comparison of a
candidate with the live version on the same cases (McNemar's exact test and an interval for the
difference), how many more cases would most likely decide an undecided gate, and a model
check's pass rate corrected for its judge's error by a random sample of human labels (PPI++),
and a rate decided case by case, valid at every look (`SequentialGate`).
Validated in the suite against statsmodels and ppi-python and by coverage simulations.
docs/contract.md, "Intervals".
"""

from evaluations.stats.decide import INSUFFICIENT, decide_on_interval
from evaluations.stats.intervals import Interval, clustered_rate, wilson, wilson_weighed
from evaluations.stats.paired import Paired, paired_comparison
from evaluations.stats.power import cases_to_decide
from evaluations.stats.ppi import Corrected, ppi_rate
from evaluations.stats.sequential import SequentialGate

__all__ = [
    "INSUFFICIENT",
    "Corrected",
    "Interval",
    "Paired",
    "SequentialGate",
    "cases_to_decide",
    "clustered_rate",
    "decide_on_interval",
    "paired_comparison",
    "ppi_rate",
    "wilson",
    "wilson_weighed",
]
