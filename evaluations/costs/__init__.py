"""Every price and cost computation of Sherlock, in one package: `prices`, `ledger`, `estimate`
and `texts`.

A model's price is a `ModelPrice` row (USD per million tokens). A model without one has no
price: what it costs is unknown, shown as "price missing" and never counted as $0. On that rule:

- `estimate`: what a run will cost before it starts (`estimate_run`, stored on the run;
  `estimate_start`, shown before a person confirms);
- `prices`: one agent call's cost and billing coverage (`agent_cost`) and judge calls'
  (`price_judge_calls`), computed per trial without the database by the engine;
- `ledger`: the cost ledger's lines (`CostEntry`), written with their daily totals by the one
  writer, `write_cost_lines` (the engine and the judge's recorder both call it), re-kinded by
  `rekind_cost_lines`, rebuilt by `rebuild_daily_costs`; a stored trial's whole cost with its
  coverage (`trial_cost`, `trials_with_judge_cost`, `unattributed_judge_spend`); the ledger by
  day, agent and kind (`daily_ledger`);
- `texts`: the one money text of every surface (`format_usd`: "price missing (N calls)",
  never $0.0000), a run's spend and estimate in words, and the warning of an estimate with
  calls that have no price.
"""
