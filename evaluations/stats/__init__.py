"""The statistics a release gate reads, as glue over scipy: intervals for a pass rate (Wilson;
clustered by case when repetitions of one case are not independent), the paired comparison of a
candidate with the live version on the same cases (McNemar's exact test and an interval for the
difference), and how many more cases would most likely decide an undecided gate. Validated in
the suite against statsmodels and by coverage simulations. docs/contract.md, "Intervals".
"""

from evaluations.stats.decide import INSUFFICIENT, decide_on_interval
from evaluations.stats.intervals import Interval, clustered_rate, wilson
from evaluations.stats.paired import Paired, paired_comparison
from evaluations.stats.power import cases_to_decide

__all__ = [
    "INSUFFICIENT",
    "Interval",
    "Paired",
    "cases_to_decide",
    "clustered_rate",
    "decide_on_interval",
    "paired_comparison",
    "wilson",
]
