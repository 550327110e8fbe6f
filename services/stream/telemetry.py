"""Traces across every hop (OpenTelemetry): one `record_turn` is one trace through the groups
that consume it, one `context` one trace through the search with a span per memory layer.

* **Every broker** of `mnemostream run` gets FastStream's `KafkaTelemetryMiddleware` when
  traces are on (`Tracing.middlewares`): a single-record subscriber (the search's requests)
  continues the trace its record's `traceparent` header names, and every publish (replies,
  `EmbeddingRequested`, `MemoryChanged`, dead letters) writes the current context into its
  record's headers.
* **Batches.** FastStream gives a batch one span of its own, in a new trace that links its
  records. Our writer groups work in batches, so the batch consumer adds one span per record,
  child of the context its headers carry (`record_spans`), and what a record causes is
  published within that record's span (`caused_by`): the trace goes on through the batch.
* **The SDK** (`trace_headers`): a publish or request carries the caller's current trace context
  (W3C `traceparent`), so a trace begun by the agent goes on through the groups.
* **The search** gets a `LayerSpans` (`engine.retrieval.spans`): a span per layer and one for
  the query's embedding.

Off by default, and then free: no middleware, no record span, no layer span; `trace_headers`
and `caused_by` cost a context-variable read (docs/benchmarks.md, `benchmarks.telemetry`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Iterator, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

if TYPE_CHECKING:
    from aiokafka import ConsumerRecord
    from opentelemetry.trace import Span, Tracer

    from services.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")

INSTRUMENTATION = "mnemostream"
TRACEPARENT = "traceparent"
GROUP_ATTRIBUTE = "messaging.consumer.group.name"
LAYER_ATTRIBUTE = "mnemostream.layer"

_PROPAGATOR = TraceContextTextMapPropagator()
_CAUSES: ContextVar[dict[int, Context] | None] = ContextVar("mnemostream_causes", default=None)
"""The trace context of each record (and of its decoded event) of the batch being handled,
by `id()`: what `caused_by` continues."""

_active: Tracing | None = None
_OFF = contextlib.nullcontext()
"""What the hooks return when there is nothing to trace: one shared, reusable no-op."""


class Tracing:
    """The traces of one process: the tracer provider, FastStream's middleware for its
    brokers, the tracer of the record and layer spans."""

    def __init__(self, provider: TracerProvider, *, owned: bool) -> None:
        self.provider = provider
        self.tracer: Tracer = provider.get_tracer(INSTRUMENTATION)
        self._owned = owned

    def middlewares(self) -> list[Any]:
        """The broker middleware that traces every consume and publish (FastStream's)."""
        from faststream.kafka.opentelemetry import KafkaTelemetryMiddleware

        return [KafkaTelemetryMiddleware(tracer_provider=self.provider)]

    def layer_spans(self) -> LayerSpans:
        return LayerSpans(self.tracer)

    def close(self) -> None:
        """Flush the spans still buffered; shut the provider down if it was built here."""
        shutdown = getattr(self.provider, "shutdown", None)
        if self._owned and callable(shutdown):
            shutdown()


class LayerSpans:
    """`engine.retrieval.spans.LayerSpans` on a tracer: one span per layer searched."""

    def __init__(self, tracer: Tracer) -> None:
        self._tracer = tracer

    def layer(self, name: str) -> contextlib.AbstractContextManager[object]:
        return self._tracer.start_as_current_span(
            f"search layer {name}", attributes={LAYER_ATTRIBUTE: name}
        )

    def step(self, name: str) -> contextlib.AbstractContextManager[object]:
        return self._tracer.start_as_current_span(f"search {name}")


def start(
    settings: Settings, groups: Sequence[str], provider: TracerProvider | None = None
) -> Tracing | None:
    """The process's tracing, made active: on `provider` when given (a test's, with an
    in-memory exporter), else on an OTLP/HTTP exporter to `settings.otel.endpoint`; None
    (traces off) when neither is set."""
    global _active
    if provider is not None:
        _active = Tracing(provider, owned=False)
    elif settings.otel.endpoint:
        _active = Tracing(_otlp_provider(settings, groups), owned=True)
    else:
        return None
    return _active


def stop(tracing: Tracing | None) -> None:
    """Flush and deactivate `tracing` (from `start`)."""
    global _active
    if tracing is None:
        return
    if _active is tracing:
        _active = None
    tracing.close()


def active() -> Tracing | None:
    """The tracing of this process (None: traces off)."""
    return _active


def _otlp_provider(settings: Settings, groups: Sequence[str]) -> TracerProvider:
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider as SdkProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
    except ImportError as exc:  # the optional extra is missing
        raise RuntimeError(
            "MNEMOSTREAM_OTEL_ENDPOINT is set but the OpenTelemetry SDK is not installed: "
            "pip install 'mnemostream[otel]'"
        ) from exc
    otel = settings.otel
    resource = Resource.create(
        {"service.name": otel.service_name, "mnemostream.groups": ",".join(groups)}
    )
    provider = SdkProvider(
        resource=resource, sampler=ParentBased(TraceIdRatioBased(otel.sample_ratio))
    )
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=traces_url(otel.endpoint)))
    )
    log.info("traces exported to %s", traces_url(otel.endpoint))
    return provider


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL of `endpoint`: a bare collector address gets `/v1/traces`."""
    base = endpoint.rstrip("/")
    scheme_end = base.find("://")
    has_path = "/" in base[scheme_end + 3 :] if scheme_end >= 0 else "/" in base
    return base if has_path else f"{base}/v1/traces"


def _headers(record: ConsumerRecord[Any, Any]) -> dict[str, str]:
    return {
        name: value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        for name, value in record.headers or ()
        if name == TRACEPARENT or name == "tracestate"
    }


def record_spans(
    group: str, records: Sequence[ConsumerRecord[Any, Any]]
) -> contextlib.AbstractContextManager[None]:
    """One span per record of a batch, child of the trace context in the record's headers,
    open while the batch is handled; `caused_by` a record (or the event `note_cause` tied
    to it) continues its span. Nothing when traces are off."""
    tracing = _active
    return _OFF if tracing is None else _record_spans(tracing, group, records)


@contextlib.contextmanager
def _record_spans(
    tracing: Tracing, group: str, records: Sequence[ConsumerRecord[Any, Any]]
) -> Iterator[None]:
    spans: list[Span] = []
    causes: dict[int, Context] = {}
    for record in records:
        parent = _PROPAGATOR.extract(_headers(record))
        span = tracing.tracer.start_span(
            f"{record.topic} process",
            context=parent,
            kind=trace.SpanKind.CONSUMER,
            attributes={
                "messaging.system": "kafka",
                "messaging.destination.name": record.topic,
                GROUP_ATTRIBUTE: group,
                "messaging.destination.partition.id": str(record.partition),
                "messaging.kafka.offset": record.offset,
            },
        )
        spans.append(span)
        causes[id(record)] = trace.set_span_in_context(span, parent)
    token = _CAUSES.set(causes)
    try:
        yield
    finally:
        _CAUSES.reset(token)
        for span in spans:
            span.end()


def note_cause(record: ConsumerRecord[Any, Any], event: object) -> None:
    """Tie the event decoded from `record` to the record's span (`caused_by(event)`)."""
    causes = _CAUSES.get()
    if causes is not None and id(record) in causes:
        causes[id(event)] = causes[id(record)]


def caused_by(cause: object) -> contextlib.AbstractContextManager[None]:
    """Within the span of the batch record (or event) `cause`, if `record_spans` made one:
    what is published here continues its trace."""
    causes = _CAUSES.get()
    found = None if causes is None else causes.get(id(cause))
    return _OFF if found is None else _attached(found)


@contextlib.contextmanager
def _attached(found: Context) -> Iterator[None]:
    token = otel_context.attach(found)
    try:
        yield
    finally:
        otel_context.detach(token)


async def within(cause: object, work: Awaitable[T]) -> T:
    """`work` awaited `caused_by(cause)`."""
    with caused_by(cause):
        return await work


def trace_headers() -> list[tuple[str, bytes]]:
    """The current trace context as Kafka record headers (W3C `traceparent`, `tracestate`)
    when the caller is inside a span; none otherwise."""
    if not trace.get_current_span().get_span_context().is_valid:
        return []
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return [(name, value.encode()) for name, value in carrier.items()]


def trace_id_of(record: ConsumerRecord[Any, Any]) -> str | None:
    """The trace id (32 hex digits) of `record`: its `traceparent` header's, else the current
    span's; None when neither is there."""
    for name, value in record.headers or ():
        if name == TRACEPARENT:
            text = value.decode("ascii", "replace") if isinstance(value, bytes) else str(value)
            parts = text.split("-")
            if len(parts) >= 3 and len(parts[1]) == 32 and parts[1] != "0" * 32:
                return parts[1]
    return current_trace_id()


def current_trace_id() -> str | None:
    """The current span's trace id (32 hex digits), None outside a span."""
    found = trace.get_current_span().get_span_context()
    return format(found.trace_id, "032x") if found.is_valid else None
