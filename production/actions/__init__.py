"""The production app's verbs, one per module (STYLE 2): online rules (Builder or Admin of
the agent) and rollback proposals (opened by a breach, decided by a Publisher)."""
