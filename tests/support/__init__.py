"""Helpers the tests share: the loopback OpenAI-compatible server (`llm_server`), real
django-q2 workers (`workers`), factories, the agents under test, the governance personas, and
a destination for verifiers (`verifiers`: the `ledger` alias and a trial ready for evidence).
Test modules import from here; conftest files only declare fixtures."""
