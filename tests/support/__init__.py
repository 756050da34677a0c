"""Helpers the tests share: the loopback OpenAI-compatible server (`llm_server`), real
django-q2 workers (`workers`), factories, the agents under test, and the governance personas.
Test modules import from here; conftest files only declare fixtures."""
