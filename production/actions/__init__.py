"""The production app's verbs, one per module (STYLE.md item 2): a trace added to a dataset,
online rules (Builder or Admin of the agent) and rollback proposals (opened by a breach,
decided by a Publisher)."""
