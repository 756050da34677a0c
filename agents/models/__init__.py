"""Models of the agents app, re-exported here: import from `agents.models`."""

from agents.models.agents import Agent, AgentVersion, Tool, config_hash

__all__ = ["Agent", "AgentVersion", "Tool", "config_hash"]
