from django.apps import AppConfig


class GovernanceConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "governance"

    def ready(self):
        from evaluations.contract import register_policy_lookup, register_thresholds_provider
        from governance import receivers, system_checks  # noqa: F401  (registers the checks)
        from governance.publishing.decision import in_force_thresholds, policy_applied_by_id

        receivers.connect()
        from allauth.account.signals import user_logged_in

        from governance.sso.adapter import apply_roles_on_sign_in

        user_logged_in.connect(apply_roles_on_sign_in, dispatch_uid="gov-sso-roles")
        # The run and compare pages show a run's contract under the policy in force for its
        # agent, as the publish gate decides it (evaluations.contract.applied).
        register_thresholds_provider(in_force_thresholds)
        # A verdict asked under a named policy (GET /api/v1/runs/{id}/verdict/?policy=<id>).
        register_policy_lookup(policy_applied_by_id)
        # An agent's Builders run it on the datasets it is gated on (evaluations.reads.run_rights).
        from evaluations.reads import run_rights
        from governance.models.gate_datasets import gated_dataset_ids

        if gated_dataset_ids not in run_rights.RUN_RIGHTS:
            run_rights.RUN_RIGHTS.append(gated_dataset_ids)
