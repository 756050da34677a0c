"""The production app's verbs, one per module: a trace added to a dataset,
online rules (Builder or Admin of the agent) and rollback proposals (opened by a breach,
decided by a Publisher)."""
