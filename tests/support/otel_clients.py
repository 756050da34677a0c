"""Real OpenTelemetry clients for the production tests: the Python SDK's tracer provider with
the stock OTLP/HTTP exporters (protobuf, `opentelemetry-exporter-otlp-proto-http`, or JSON,
`opentelemetry-exporter-otlp-json-http`), configured the way a team configures them, through
`OTEL_EXPORTER_OTLP_ENDPOINT` (the base URL: the exporter appends `v1/traces`) and
`OTEL_EXPORTER_OTLP_HEADERS` (the API key), with the agent named in the resource."""

import os
from contextlib import contextmanager
from unittest import mock
from urllib.parse import quote

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor


def exporter_env(base_url, secret, **extra):
    """The environment a team sets for its exporter (the header value is URL-encoded, as the
    OTLP exporter specification says)."""
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"{base_url}/api/v1",
        "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization={quote('Token ' + secret)}",
        **extra,
    }


@contextmanager
def otlp_provider(base_url, secret, resource, encoding="protobuf", **env):
    """A TracerProvider exporting to Sherlock; spans are flushed when the block ends. Yields
    (provider, exporter)."""
    with mock.patch.dict(os.environ, exporter_env(base_url, secret, **env)):
        if encoding == "json":
            from opentelemetry.exporter.otlp.json.http.trace_exporter import OTLPSpanExporter
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        exporter = OTLPSpanExporter()
        provider = TracerProvider(resource=Resource.create(resource))
        provider.add_span_processor(BatchSpanProcessor(exporter))
        try:
            yield provider, exporter
        finally:
            provider.force_flush()
            provider.shutdown()
