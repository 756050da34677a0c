"""Models of the governance app, re-exported here: import from `governance.models`."""

from governance.models.audit import AuditEntry, verify_chain
from governance.models.policies import PublishingPolicy
from governance.models.publishing import Bypass, PublishRequest

__all__ = ["AuditEntry", "Bypass", "PublishRequest", "PublishingPolicy", "verify_chain"]
