"""Stopping a gate run early when its answer is clear: judge calls saved and decisions wrong.

A case pass rate gated at 0.9 on a dataset of 300 cases, evaluated in a random order and
decided case by case with `evaluations.stats.SequentialGate` (testing by betting, valid at
every look, at 0.95), against the full run (all 300 cases, always). Four scenarios of the true
rate, 10,000 simulated runs each: a clear win (0.97), a clear loss (0.75), a close call above
the threshold (0.92) and one on it (0.90). Each case costs the same judge calls, so the share
of cases not evaluated is the share of judge calls saved. A decision is wrong when it passes a
rate below the threshold or fails one above it (on the threshold, either is wrong): at most
α/2 = 2.5 % each way by construction; the simulation checks it. The last line is
machine-readable: `win_saved=… loss_saved=… close_saved=… worst_error=…`.

    .venv/bin/python bench/sequential_gate.py [--runs 10000] [--cases 300]
"""

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluations.stats import SequentialGate  # noqa: E402

SCENARIOS = {"clear win": 0.97, "clear loss": 0.75, "close call": 0.92, "on the threshold": 0.90}
THRESHOLD = 0.9


def simulate(rate, runs, cases, seed):
    """(mean cases evaluated, share passed, share failed) over `runs` simulated runs."""
    rng = np.random.default_rng(seed)
    used = passed = failed = 0
    for outcomes in rng.random((runs, cases)) < rate:
        gate = SequentialGate(THRESHOLD)
        for outcome in outcomes:
            if gate.add(bool(outcome)) != "insufficient":
                break
        used += gate.seen
        passed += gate.decision == "pass"
        failed += gate.decision == "fail"
    return used / runs, passed / runs, failed / runs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--cases", type=int, default=300)
    args = parser.parse_args()
    print(f"{args.runs} runs per scenario, {args.cases} cases, threshold {THRESHOLD}")
    print(f"{'scenario':<17} {'rate':>5} {'cases':>7} {'saved':>6} {'pass':>7} {'fail':>7}")
    figures, worst = {}, 0.0
    for seed, (name, rate) in enumerate(SCENARIOS.items()):
        used, passed, failed = simulate(rate, args.runs, args.cases, seed)
        saved = 1 - used / args.cases
        wrong = failed if rate > THRESHOLD else passed if rate < THRESHOLD else passed + failed
        worst = max(worst, wrong if rate != THRESHOLD else max(passed, failed))
        figures[name.split()[-1]] = saved
        print(f"{name:<17} {rate:>5.2f} {used:>7.1f} {saved:>6.1%} {passed:>7.2%} {failed:>7.2%}")
    print(
        f"win_saved={figures['win']:.3f} loss_saved={figures['loss']:.3f} "
        f"close_saved={figures['call']:.3f} worst_error={worst:.4f}"
    )


if __name__ == "__main__":
    main()
