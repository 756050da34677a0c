"""Every price and cost computation of Sherlock, in one package:
`prices`, `ledger`, `estimate` and `texts`.

A model's price is a `ModelPrice` row (USD per million tokens; `ModelPrice.cost` prices one
call's tokens). A model without a row has no price: what it costs is unknown, shown as "price
missing" and never counted as $0. On that rule this module builds:

- the estimate `StartRun` stores on a run before it starts (`estimate_run`), with the judge's
  status and a warning naming the blocking model checks that cannot be scored, and the one the
  start forms show before a person confirms (`estimate_start`);
- the cost of one agent call and its billing coverage (`agent_cost`), and of judge calls
  (`price_judge_calls`, from prices loaded once or looked up in one query), which the run
  engine computes per trial without the database (`evaluations.engine.trials`);
- the lines of the cost ledger (`CostEntry`) for agent and judge calls (`agent_cost_line`,
  `judge_cost_lines`), written with their daily totals (`DailyCost`: `write_cost_lines`,
  re-kinded with them by `rekind_cost_lines`, computed anew by `rebuild_daily_costs`);
- a stored trial's whole cost (agent + judge) with its coverage, as the contract of stored runs
  and the trial-record export judge it (`trials_with_judge_cost`, `trial_cost`,
  `unattributed_judge_spend`, and `unattributed_judge_spend_of` for many runs at once);
- the cost views: the ledger by day, agent and kind (`daily_ledger`, from the daily
  totals), and the one money text
  of every page, the admin, the commands (`format_usd`: "price missing (N calls)", never
  $0.0000) with a run's spend and estimate in words (`describe_spend`, `describe_estimate`),
  and the warning of an estimate with calls that have no price (`coverage_warning`).

The run engine and the judge's ORM recorder (`evaluations.judge.recording.record_calls`, for
judge calls made outside a trial) both price judge calls and write their ledger lines here,
through `write_cost_lines`, the one writer of lines.
"""
