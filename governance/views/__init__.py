"""Governance's pages: the publish page of a version, with its verbs and confirmations
(`publish`), and the audit page, its verification and export (`audit`)."""
