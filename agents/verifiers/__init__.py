"""Verifiers: how Sherlock checks at the destination what a tool did or a case asked for.

A tool declares its verifier (``Tool.verifier``: was this call's effect written?), and a case
version may name one for its outcome (``CaseVersion.outcome_check``: does the thing the task
asked for exist?). The transcript may say a flight was booked; the outcome is whether
the booking exists. This package is that part of the tools, kept in ``agents`` beside them so a
tool can validate its verifier on save without reaching up into ``evaluations``:

- ``spec``: the verifier language (kinds, the operator's allowlists, ``validate_verifier_spec``
  called when a tool or a case is saved, ``describe_verifier``);
- ``runners``: running one verifier (python, http, sql) with its timeout, ``run_verifier``;
- ``predicates``: ``{dotted.name}`` templates, the small JSON path and ``check_predicate``.

Evidence collection (which verifiers run for a trial, and what the trial records) is
``evaluations.engine.evidence``; it calls ``run_verifier``.
"""
