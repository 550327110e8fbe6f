"""Traces' hooks without servers (issue 33): off by default and then no-ops; the SDK's
headers carry the caller's trace; a dead letter's and a log line's trace id; the OTLP
endpoint's URL; the search's span per layer on the in-memory runtime."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
from aiokafka import ConsumerRecord
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import ValidationError

from schemas.dead_letters import DeadLetter
from schemas.requests import ContextRequest
from schemas.scope import Scope
from services.ops.logs import TraceIds
from services.runtime.memory import memory_runtime
from services.settings import Settings, settings_problem
from services.stream import telemetry


def exported() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def record(headers: list[tuple[str, bytes]], offset: int = 0) -> ConsumerRecord[Any, Any]:
    return ConsumerRecord("memory.turns.v1", 0, offset, 0, 0, b"k", b"{}", None, 1, 2, headers)


def test_traces_are_off_by_default_and_the_hooks_do_nothing() -> None:
    settings = Settings()
    assert settings.otel.endpoint == ""
    assert telemetry.start(settings, ["transcripts"]) is None
    assert telemetry.active() is None
    batch = [record([])]
    assert telemetry.record_spans("g", batch) is telemetry.caused_by(batch[0])  # one no-op
    assert telemetry.trace_headers() == []  # outside a span: nothing added to a publish


def test_an_endpoint_turns_traces_on_with_an_otlp_exporter() -> None:
    settings = Settings(otel_endpoint="http://127.0.0.1:9", otel_sample_ratio=0.5)
    tracing = telemetry.start(settings, ["search"])
    try:
        assert tracing is not None
        assert telemetry.active() is tracing
        assert len(tracing.middlewares()) == 1
    finally:
        telemetry.stop(tracing)
    assert telemetry.active() is None


@pytest.mark.parametrize(
    ("given", "url"),
    [
        ("http://collector:4318", "http://collector:4318/v1/traces"),
        ("http://collector:4318/", "http://collector:4318/v1/traces"),
        ("https://otel.example/v1/traces", "https://otel.example/v1/traces"),
    ],
)
def test_the_traces_url_of_an_endpoint(given: str, url: str) -> None:
    assert telemetry.traces_url(given) == url


def test_the_sdk_headers_and_a_dead_letter_carry_the_callers_trace() -> None:
    provider, _ = exported()
    with provider.get_tracer("agent").start_as_current_span("turn") as span:
        headers = telemetry.trace_headers()
    trace_id = format(span.get_span_context().trace_id, "032x")
    assert [name for name, _ in headers] == ["traceparent"]
    assert trace_id in headers[0][1].decode()
    # the consumer side reads it back from the record, outside any span
    assert telemetry.trace_id_of(record(headers)) == trace_id
    assert telemetry.trace_id_of(record([("traceparent", b"garbage")])) is None
    letter = DeadLetter.model_validate(
        {
            **{"group": "g", "source_topic": "t", "partition": 0, "offset": 1, "key": None},
            **{"error": "e", "error_type": "E", "attempts": 1, "payload": "{}"},
            **{"failed_at": "2026-01-01T00:00:00Z", "trace_id": trace_id},
        }
    )
    assert DeadLetter.model_validate_json(letter.model_dump_json()).trace_id == trace_id


def test_a_batch_record_span_continues_the_trace_and_what_it_causes() -> None:
    provider, exporter = exported()
    with provider.get_tracer("agent").start_as_current_span("turn") as root:
        headers = telemetry.trace_headers()
    tracing = telemetry.start(Settings(), ["transcripts"], provider)
    batch, event = [record(headers), record([], offset=1)], object()
    try:
        with telemetry.record_spans("p.transcripts", batch):
            telemetry.note_cause(batch[0], event)
            with telemetry.caused_by(event):
                caused = telemetry.current_trace_id()
            with telemetry.caused_by(batch[1]):
                other = telemetry.current_trace_id()
    finally:
        telemetry.stop(tracing)
    trace_id = format(root.get_span_context().trace_id, "032x")
    assert caused == trace_id
    assert other is not None
    assert other != trace_id
    spans = [s for s in exporter.get_finished_spans() if s.name == "memory.turns.v1 process"]
    assert len(spans) == 2
    assert spans[0].parent is not None
    assert spans[0].parent.span_id == root.get_span_context().span_id


def test_a_log_line_inside_a_span_names_its_trace() -> None:
    provider, _ = exported()
    stamp = TraceIds()
    outside = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed %s", ("a",), None)
    stamp.filter(outside)
    assert "trace_id=" not in outside.getMessage()
    with provider.get_tracer("t").start_as_current_span("s") as span:
        inside = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed %s", ("a",), None)
        stamp.filter(inside)
    trace_id = format(span.get_span_context().trace_id, "032x")
    assert inside.getMessage() == f"failed a trace_id={trace_id}"
    assert inside.__dict__["trace_id"] == trace_id


async def test_the_search_makes_a_span_per_layer_when_given_them() -> None:
    provider, exporter = exported()
    layers = ["working", "scene", "graph", "patterns", "archives", "vectors"]
    scope = Scope.parse({"agentWallet": "0xSpans", "userAddress": "u", "threadId": "t"})
    async with memory_runtime(Settings()) as rt:
        request = ContextRequest(scope=scope, query="where?", layers=layers)
        await rt.search.context(request, int(time.time() * 1000))
        assert exporter.get_finished_spans() == ()  # no spans port: no span
        rt.search.spans = telemetry.LayerSpans(provider.get_tracer("search"))
        with provider.get_tracer("t").start_as_current_span("request") as parent:
            await rt.search.context(
                request.model_copy(update={"query": "when?"}), int(time.time() * 1000)
            )
    spans = [s for s in exporter.get_finished_spans() if s.name != "request"]
    assert {s.name for s in spans} == {f"search layer {name}" for name in layers} | {
        "search embed query"
    }
    assert {s.parent.span_id for s in spans if s.parent} == {parent.get_span_context().span_id}


@pytest.mark.parametrize("endpoint", ["collector:4318", "grpc://collector:4317", "http://"])
def test_an_endpoint_that_is_not_an_http_url_is_refused_in_one_line(endpoint: str) -> None:
    with pytest.raises(ValidationError) as refused:
        Settings(otel_endpoint=endpoint)
    assert settings_problem(refused.value) == (
        "invalid setting: MNEMOSTREAM_OTEL_ENDPOINT: must be an OTLP/HTTP URL, "
        "http(s)://host:port (e.g. :4318)"
    )
