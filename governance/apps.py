from django.apps import AppConfig


class GovernanceConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "governance"

    def ready(self):
        from evaluations.contract import register_policy_lookup, register_thresholds_provider
        from governance import receivers, system_checks  # noqa: F401  (registers the checks)
        from governance.decision import in_force_thresholds, policy_applied_by_id

        receivers.connect()
        # The run and compare pages show a run's contract under the policy in force for its
        # agent, as the publish gate decides it (evaluations.contract.applied).
        register_thresholds_provider(in_force_thresholds)
        # A verdict asked under a named policy (GET /api/v1/runs/{id}/verdict/?policy=<id>).
        register_policy_lookup(policy_applied_by_id)
