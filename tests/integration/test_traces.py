"""Traces across every hop, on the real broker (issue 33): the groups run in-process with an
in-memory span exporter; the agent's own span (the test's) wraps the SDK call.

* one `record_turn` is one trace through the transcripts, embeddings and invalidation
  consumers (the writer groups handle batches: a span per record continues the trace);
* one `context` is one trace through the search, with a span per memory layer;
* a dead letter carries its record's trace id, and so does the line that logs it."""

from __future__ import annotations

import asyncio
import base64
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer
from pydantic import BaseModel

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from schemas import topics
from services.endpoints import Endpoints
from services.ops.logs import TraceIds
from services.runtime import Runtime
from services.sdk.client import MemoryClient
from services.stream.dead_letters import read_letters
from services.stream.telemetry import GROUP_ATTRIBUTE, LAYER_ATTRIBUTE
from tests.support.http_server import Provider, Reply, Responder
from tests.support.pipeline import groups_running

pytestmark = pytest.mark.integration

GROUPS = ["transcripts", "embeddings", "invalidation", "search"]
AGENT = "0xTraced"


class Traced:
    def __init__(self, rt: Runtime, client: MemoryClient, exporter: InMemorySpanExporter):
        self.rt, self.client, self.exporter = rt, client, exporter
        self.tracer: Tracer = TracerProvider().get_tracer("agent")  # the agent's own traces

    def spans(self, trace_id: int) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if s.context.trace_id == trace_id]

    async def until(
        self, trace_id: int, done: Callable[[list[ReadableSpan]], bool], seconds: float = 60
    ) -> list[ReadableSpan]:
        """The spans of the trace once `done` says they are all there (waits for the groups,
        not a timing assertion)."""
        deadline = time.monotonic() + seconds
        while True:
            spans = self.spans(trace_id)
            if done(spans) or time.monotonic() > deadline:
                return spans
            await asyncio.sleep(0.2)


def group_of(span: ReadableSpan) -> str:
    """The group of a record's span: its Kafka group id is `<prefix>.<group>`."""
    return str((span.attributes or {}).get(GROUP_ATTRIBUTE, "")).rpartition(".")[2]


def groups_of(spans: list[ReadableSpan]) -> set[str]:
    return {group_of(s) for s in spans} - {""}


@asynccontextmanager
async def deployment(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, groups: list[str], **extra: Any
) -> AsyncIterator[Traced]:
    """`groups` running in-process, their spans in an in-memory exporter."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    async with groups_running(
        stack, minilm, "traces", groups, tracer_provider=provider, **extra
    ) as (rt, client):
        yield Traced(rt, client, exporter)


@pytest.fixture
async def traced(stack: Endpoints, minilm: LocalMiniLMEmbedder) -> AsyncIterator[Traced]:
    async with deployment(stack, minilm, GROUPS) as running:
        yield running


def scope(thread: str) -> dict[str, Any]:
    return {"agentWallet": AGENT, "userAddress": "0xUser", "threadId": thread}


async def test_a_record_turn_is_one_trace_through_the_writer_groups(traced: Traced) -> None:
    with traced.tracer.start_as_current_span("agent turn") as root:
        await traced.client.record_turn(
            {**scope("t1"), "userMessage": "I moved to Lisbon.", "assistantMessage": "Noted."}
        )
    trace_id = root.get_span_context().trace_id
    wanted = {"transcripts", "embeddings", "invalidation"}
    # invalidation twice: the transcript's change and the vector's
    spans = await traced.until(
        trace_id,
        lambda s: (
            wanted <= groups_of(s) and sum(1 for x in s if group_of(x) == "invalidation") >= 2
        ),
    )
    assert wanted <= groups_of(spans), [s.name for s in spans]
    by_group = {g: [s for s in spans if group_of(s) == g] for g in wanted}
    assert by_group["transcripts"][0].name == f"{topics.TURNS} process"
    assert by_group["embeddings"][0].name == f"{topics.EMBEDDINGS} process"
    assert {s.name for s in by_group["invalidation"]} == {f"{topics.CHANGED} process"}
    # the hops are parent and child: the transcripts record's parent is the agent's span
    assert by_group["transcripts"][0].parent is not None
    assert by_group["transcripts"][0].parent.span_id == root.get_span_context().span_id
    # (every span the groups finished, not only this turn's, was compared with this trace
    # here: in the full suite the groups also process other tests' records, in other traces)


async def test_a_context_is_one_trace_with_a_span_per_layer(traced: Traced) -> None:
    layers = ["working", "scene", "graph", "patterns", "archives", "vectors"]
    with traced.tracer.start_as_current_span("agent pre_turn") as root:
        reply = await traced.client.context("where do I live?", scope("t2"), layers=layers)
    assert reply.error is None
    trace_id = root.get_span_context().trace_id
    # the request's own span ends after its handler answered (the reply is published from
    # inside it), so it is waited for too: on a loaded machine it is exported last
    spans = await traced.until(
        trace_id,
        lambda s: (
            sum(1 for x in s if x.name.startswith("search layer ")) == len(layers)
            and any(x.name == f"{topics.SEARCH} process" for x in s)
        ),
    )
    names = {s.name for s in spans}
    assert {f"search layer {name}" for name in layers} <= names, names
    assert {str((s.attributes or {}).get(LAYER_ATTRIBUTE)) for s in spans} >= set(layers)
    assert "search embed query" in names
    assert f"{topics.SEARCH} process" in names  # FastStream's span of the request
    process = next(s for s in spans if s.name == f"{topics.SEARCH} process")
    for span in spans:
        if span.name.startswith("search layer "):
            assert span.parent is not None
            assert span.parent.span_id == process.context.span_id


class NotATurn(BaseModel):
    nonsense: str


async def test_a_dead_letter_and_its_log_line_carry_the_trace_id(traced: Traced) -> None:
    lines: list[str] = []

    class Lines(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    handler = Lines()
    handler.addFilter(TraceIds())
    dlq_log = logging.getLogger("services.stream.guard")
    dlq_log.addHandler(handler)
    marker = uuid.uuid4().hex
    try:
        with traced.tracer.start_as_current_span("agent bad turn") as root:
            await traced.client.publish(topics.TURNS, NotATurn(nonsense=marker), "0xTraced")
        trace_id = format(root.get_span_context().trace_id, "032x")
        deadline = time.monotonic() + 60
        found = []
        while not found and time.monotonic() < deadline:
            letters = await read_letters(
                traced.rt.endpoints.kafka_bootstrap,
                group=traced.rt.group_id("transcripts"),
                idle_ms=300,
            )
            found = [x.letter for x in letters if marker in x.letter.payload]
            if not found:
                await asyncio.sleep(0.3)
    finally:
        dlq_log.removeHandler(handler)
    assert found, "the bad turn was not dead-lettered"
    assert found[0].trace_id == trace_id
    assert any("dead-lettered" in line and f"trace_id={trace_id}" in line for line in lines), lines


async def test_a_sealed_turn_through_the_ingress_is_one_trace(
    stack: Endpoints, minilm: LocalMiniLMEmbedder
) -> None:
    """With sealed events the runtime publishes to the ingress: the sealing group's record
    span continues the agent's trace, and its publish to the source topic carries it on."""
    key = base64.b64encode(b"t" * 32).decode()
    groups = ["sealing", "transcripts", "invalidation"]
    async with deployment(
        stack, minilm, groups, event_encryption_key=key, event_ingress=True
    ) as traced:
        with traced.tracer.start_as_current_span("agent turn") as root:
            await traced.client.record_turn(
                {**scope("t3"), "userMessage": "I like green tea.", "assistantMessage": "Ok."}
            )
        trace_id = root.get_span_context().trace_id
        spans = await traced.until(trace_id, lambda s: set(groups) <= groups_of(s))
        assert set(groups) <= groups_of(spans), [s.name for s in spans]
        sealing = next(s for s in spans if group_of(s) == "sealing")
        assert sealing.name == f"{topics.INGRESS} process"
        assert sealing.parent is not None
        assert sealing.parent.span_id == root.get_span_context().span_id


async def test_the_endpoint_setting_exports_the_spans_over_otlp_http(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, provider: Callable[[Responder], Provider]
) -> None:
    """`MNEMOSTREAM_OTEL_ENDPOINT` alone turns traces on: the search's spans reach a local
    OTLP/HTTP collector (protobuf on `/v1/traces`) by the time the groups have stopped."""
    collector = provider(lambda r: Reply(200, b""))
    agent = TracerProvider().get_tracer("agent")
    async with groups_running(
        stack,
        minilm,
        "otlp",
        ["search"],
        otel_endpoint=collector.url,
        otel_service_name="traces-test",
    ) as (_, client):
        with agent.start_as_current_span("agent pre_turn") as root:
            reply = await client.context("anything?", scope("t4"), layers=["vectors"])
        assert reply.error is None
    sent = b"".join(r.body for r in collector.received if r.path == "/v1/traces")
    assert bytes.fromhex(format(root.get_span_context().trace_id, "032x")) in sent
    assert b"search layer vectors" in sent
    assert b"traces-test" in sent
