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


def finished_spans(resource, build):
    """The spans `build(tracer)` ends, from the SDK (in memory), with `resource`."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create(resource))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    build(provider.get_tracer("team.agent", "1.0"))
    provider.shutdown()
    return list(memory.get_finished_spans())


def export_body(spans):
    """The protobuf body the stock exporter sends for `spans` (its own encoder)."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return encode_spans(spans).SerializeToString()


def export_json(spans):
    """The JSON body the stock JSON exporter sends for `spans` (its own encoder)."""
    from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans

    return encode_spans(spans).to_json().encode()
