"""Models of the governance app, re-exported here: import from `governance.models`."""

from governance.models.api_keys import APIKey
from governance.models.attestations import Attestation, AttestationKey
from governance.models.audit import AuditEntry, verify_chain
from governance.models.gate_datasets import GateDataset, gate_datasets_for
from governance.models.policies import PublishingPolicy
from governance.models.publishing import Bypass, PublishRequest
from governance.models.roles import RoleGrant
from governance.models.sso import SSOGroupRole, SSOProvider
from governance.models.webhooks import WebhookDelivery, WebhookEndpoint

__all__ = [
    "APIKey",
    "Attestation",
    "AttestationKey",
    "AuditEntry",
    "Bypass",
    "GateDataset",
    "PublishRequest",
    "PublishingPolicy",
    "RoleGrant",
    "SSOGroupRole",
    "SSOProvider",
    "WebhookDelivery",
    "WebhookEndpoint",
    "gate_datasets_for",
    "verify_chain",
]
