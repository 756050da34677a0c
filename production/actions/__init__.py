"""The production app's verbs, one per module (STYLE.md item 2)."""
