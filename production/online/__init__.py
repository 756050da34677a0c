"""Online scoring of production traces (points 4-5; docs/production-online.md).

- `rules`: what a rule selects (deterministic sampling, attribute filters) and the checks it
  runs, validated once for the rule's actions;
- `spend`: the daily judge spend cap, reserved before the judge is asked and settled after;
- `scoring`: the background scoring of complete traces, through the run engine's own
  `score_transcript` and the evidence step's `collect_evidence_for` (never a second scorer);
- `contract`: the five measures of the live version over sliding windows, beside its gate run;
- `breach`: a hard gate breached with enough evidence: the `production.breach` webhook and a
  rollback proposal.
"""
