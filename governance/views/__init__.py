"""Governance's pages: the publish page of a version, with its verbs and confirmations
(`publish`), the list of versions the nav's Publish opens (`versions`), and the audit page,
its verification and export (`audit`)."""
