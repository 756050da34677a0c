"""Production in the admin: traces, online rules, their scores and rollback proposals, all
read-only. What changes them is governed and lives on the production pages (an online rule is
created and changed by `CreateOnlineRule`/`UpdateOnlineRule`, a proposal confirmed or dismissed
by its actions, a trace added to a dataset by `AddTraceToDataset`); each screen links there."""

from production.admin import online, traces  # noqa: F401 (they register)
