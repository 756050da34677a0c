"""Models of the agents app, re-exported here: import from `agents.models`."""

from agents.models.agents import Agent, AgentScopedQuerySet, AgentVersion, Tool, config_hash

__all__ = ["Agent", "AgentScopedQuerySet", "AgentVersion", "Tool", "config_hash"]
