"""Production traces: OpenTelemetry spans received over OTLP/HTTP, joined into traces,
attributed to an agent's version and normalized into Sherlock's transcript format
(docs/production.md)."""
