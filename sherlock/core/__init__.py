"""Sherlock's shared kernel: the framework code every app builds on, importing no app.

- `actions`: the action template (`check()` / `execute()`);
- `errors`: the domain errors actions raise (`ActionDenied`, `ActionConflict`, `ActionInvalid`,
  `ActionRefused`);
- `permissions`: global-or-object permission checks and scoped querysets;
- `audit` and `middleware`: the audit writer and the request context it reads;
- `imports`: the allowlisted import of operator-named callables;
- `egress`: the one rule for the environment variables and destinations user-written configs
  name (agents, verifiers, webhooks): operator-listed, never Sherlock's own secrets;
- `states`: compare-and-set moves along declared state transitions;
- `api`: the API's exception handler;
- `admin`: admin mixins shared by the apps;
- `htmx`: the full-page-or-partial helper;
- `commands`: the base of management commands whose exit code is a verdict (`gate`, `evaluate`).

The layering `governance > evaluations > agents > sherlock.core` is checked by `lint-imports`
(pyproject.toml); the one upward reference is the audit writer resolving
`governance.AuditEntry` through the app registry.
"""
