"""Two runs side by side, read for the compare page and `GET /api/v1/runs/compare/` alike:
whether their scores can be compared (`comparability_differences`), which cases changed
(`case_changes`), the candidate paired with the baseline on the same cases (`paired_runs`),
each check's change (`check_deltas`), and the run a candidate is compared with by default
(`live_baseline`)."""

from evaluations.choices import CaseStatus, RunStatus
from evaluations.models import CaseResult, Check, Run
from evaluations.reads.trends import check_stats
from evaluations.stats import paired_comparison
from evaluations.verdict.paired import pair_cases


def comparability_differences(a: Run, b: Run) -> list[str]:
    """What makes the scores of ``a`` and ``b`` not comparable, in words (empty: comparable)."""
    ka, kb = a.comparability or {}, b.comparability or {}
    differences = []
    if ka.get("dataset_version") != kb.get("dataset_version"):
        differences.append(f"dataset version differs: {a.dataset_version} vs {b.dataset_version}")
    checks_a, checks_b = ka.get("checks") or {}, kb.get("checks") or {}
    for label in sorted(set(checks_a) | set(checks_b)):
        if label not in checks_b:
            differences.append(f"check {label!r} only in run #{a.pk}")
        elif label not in checks_a:
            differences.append(f"check {label!r} only in run #{b.pk}")
        elif checks_a[label] != checks_b[label]:
            differences.append(
                f"check {label!r} version differs: {checks_a[label]} vs {checks_b[label]}"
            )
    judges_a, judges_b = sorted(ka.get("judge_models") or []), sorted(kb.get("judge_models") or [])
    if judges_a != judges_b:
        differences.append(
            f"judge models differ: {', '.join(judges_a) or 'none'} vs "
            f"{', '.join(judges_b) or 'none'}"
        )
    graders = [_grader(run) for run in (a, b)]
    if graders[0] != graders[1]:
        differences.append(
            f"quality grader differs: {graders[0] or 'none'} vs {graders[1] or 'none'}"
        )
    for run in (a, b):
        if (run.comparability or {}).get("dataset_frozen") is False:
            differences.append(f"run #{run.pk} pinned an unfrozen (draft) dataset version")
    return differences


def _grader(run: Run) -> str | None:
    """The run's quality grader as "label@version" (the contract keeps the grader version apart)."""
    check = Check.objects.filter(dataset_version_id=run.dataset_version_id, quality_grader=True)
    found = check.first()
    return f"{found.label}@{found.version_hash}" if found else None


def case_changes(a: Run, b: Run) -> dict[str, list[str]]:
    """Per-case changes of state from ``a`` (baseline) to ``b`` (candidate), by case key: a
    case that loses its verdict ("passed -> unscored") is a change, and so is one that gains
    it; regressed and improved are between verdicts (passed and failed or flaky)."""
    rows = CaseResult.objects.filter(run__in=[a, b]).values_list("run_id", "case__key", "status")
    sides: dict[int, dict[str, str]] = {a.pk: {}, b.pk: {}}
    for run_id, key, status in rows:
        sides[run_id][key] = status
    base, cand = sides[a.pk], sides[b.pk]
    both = sorted(set(base) & set(cand))
    passed, unscored, flaky = CaseStatus.PASSED, CaseStatus.UNSCORED, CaseStatus.FLAKY
    failing = (CaseStatus.FAILED, CaseStatus.FLAKY)
    return {
        "regressed": [k for k in both if base[k] == passed and cand[k] in failing],
        "improved": [k for k in both if base[k] in failing and cand[k] == passed],
        "newly_unscored": [k for k in both if cand[k] == unscored and base[k] != unscored],
        "newly_scored": [k for k in both if base[k] == unscored and cand[k] != unscored],
        "newly_flaky": [k for k in both if cand[k] == flaky and base[k] != flaky],
        "no_longer_flaky": [k for k in both if base[k] == flaky and cand[k] != flaky],
        "only_in_a": sorted(set(base) - set(cand)),
        "only_in_b": sorted(set(cand) - set(base)),
    }


def paired_runs(a: Run, b: Run):
    """B (the candidate) paired with A on the cases with a verdict in both, when both ran the
    same dataset version to the end: the difference of the pass rates with Tango's interval and
    McNemar's test (`evaluations.stats.Paired`, "live" being A); None otherwise. One query."""
    finished = a.status == b.status == RunStatus.COMPLETED
    if a.dataset_version_id != b.dataset_version_id or not finished:
        return None
    cases = pair_cases([(b, a)])
    return paired_comparison(cases.candidate, cases.live) if cases.candidate else None


def live_baseline(user, candidate):
    """The latest completed run the user may see of the live version of ``candidate``'s agent
    on ``candidate``'s dataset (any of its versions), other than ``candidate``; or None."""
    live = candidate.agent_version.agent.live_version_id
    if live is None:
        return None
    return (
        Run.objects.for_user(user)
        .filter(
            agent_version_id=live,
            dataset_version__dataset_id=candidate.dataset_version.dataset_id,
            status=RunStatus.COMPLETED,
        )
        .exclude(pk=candidate.pk)
        .order_by("-created_at", "-pk")
        .first()
    )


def _delta(a, b):
    return None if a is None or b is None else b - a


def check_deltas(a, b):
    """One row per check label of either run: A's and B's mean score and pass rate, and the
    change from A to B (None where either side has no number)."""
    stats = check_stats([a, b])
    sa, sb = stats.get(a.pk, {}), stats.get(b.pk, {})
    rows = []
    for label in dict.fromkeys([*sa, *sb]):
        left, right = sa.get(label), sb.get(label)
        mean_a, mean_b = (left or {}).get("mean"), (right or {}).get("mean")
        rate_a, rate_b = (left or {}).get("pass_rate"), (right or {}).get("pass_rate")
        rows.append(
            {
                "label": label,
                "mode": (right or left)["mode"],
                "a": left,
                "b": right,
                "mean_delta": _delta(mean_a, mean_b),
                "rate_delta": _delta(rate_a, rate_b),
            }
        )
    return rows
