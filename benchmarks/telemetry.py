"""What traces cost, off (the default) and on: the hooks of `services.stream.telemetry` and
the search's layer spans, timed in-process (no servers).

    python -m benchmarks.telemetry            # a table
    python -m benchmarks.telemetry --json     # one JSON object

* `sdk headers`: the SDK's headers of one publish (`trace_headers`), outside a span (off)
  and inside a recording one (on).
* `batch record`: per record of a batch of 100, what the writer groups add around their
  work: the record spans (`record_spans`), tying the event to its record (`note_cause`) and
  publishing within its span (`caused_by`), with no tracing (off) and with an SDK tracer
  provider that records every span and exports none (on).
* `search context`: one `MemorySearch.context` over the in-memory runtime (a tenant of
  `--rows` remembered facts, a new query each time, so the query cache never answers), with
  no layer spans (off) and with them (on), alternated on one runtime; p50 and mean.

Off, every hook is a context-variable read or a None check: the figures say how many
nanoseconds that is next to what it wraps.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

from aiokafka import ConsumerRecord
from opentelemetry.sdk.trace import TracerProvider

from schemas.inputs import memory_remembered
from schemas.requests import ContextRequest
from schemas.scope import Scope
from services.runtime.memory import memory_runtime
from services.settings import Settings
from services.stream import telemetry

TRACEPARENT = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def per_call_ns(call: Callable[[], object], n: int) -> float:
    """Best of 5 runs of `n` calls, in ns per call."""
    best = float("inf")
    for _ in range(5):
        began = time.perf_counter_ns()
        for _ in range(n):
            call()
        best = min(best, (time.perf_counter_ns() - began) / n)
    return best


def records(n: int) -> list[ConsumerRecord[Any, Any]]:
    return [
        ConsumerRecord(
            "memory.turns.v1", 0, i, 0, 0, b"k", b"{}", None, 1, 2, [("traceparent", TRACEPARENT)]
        )
        for i in range(n)
    ]


def batch_ns(batch: list[ConsumerRecord[Any, Any]], events: list[object]) -> float:
    """ns per record of the hooks around one batch's work."""

    def run() -> None:
        with telemetry.record_spans("bench.transcripts", batch):
            for record, event in zip(batch, events, strict=True):
                telemetry.note_cause(record, event)
            for event in events:
                with telemetry.caused_by(event):
                    pass

    return per_call_ns(run, 200) / len(batch)


async def search_ms(rows: int, queries: int) -> dict[str, dict[str, float]]:
    """p50 and mean ms of `context`, without and with layer spans, alternated query by
    query on one runtime (so both see the same load and the same warm caches)."""
    async with memory_runtime(Settings()) as rt:
        scope = Scope.parse({"agentWallet": "0xBench", "userAddress": "u", "threadId": "t"})
        for i in range(rows):
            body = {**scope.wire(), "content": f"fact number {i} about topic {i % 37}"}
            await rt.rememberer.remember(memory_remembered(body))
        spans = telemetry.LayerSpans(TracerProvider().get_tracer("bench"))
        times: dict[str, list[float]] = {"off": [], "on": []}
        for i in range(queries):
            for mode in ("off", "on") if i % 2 else ("on", "off"):
                rt.search.spans = spans if mode == "on" else None
                request = ContextRequest(scope=scope, query=f"what about topic {i} ({mode})?")
                began = time.perf_counter()
                await rt.search.context(request, int(time.time() * 1000))
                times[mode].append((time.perf_counter() - began) * 1000)
        return {
            mode: {"p50": statistics.median(t), "mean": statistics.fmean(t)}
            for mode, t in times.items()
        }


def main(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"machine": platform.machine(), "python": platform.python_version()}
    result["sdk_headers_ns"] = {"off": per_call_ns(telemetry.trace_headers, 100_000)}
    tracer = TracerProvider().get_tracer("bench")
    with tracer.start_as_current_span("agent"):
        result["sdk_headers_ns"]["on"] = per_call_ns(telemetry.trace_headers, 100_000)
    batch = records(100)
    events = [object() for _ in batch]
    result["batch_record_ns"] = {"off": batch_ns(batch, events)}
    tracing = telemetry.start(Settings(), ["bench"], TracerProvider())
    try:
        result["batch_record_ns"]["on"] = batch_ns(batch, events)
    finally:
        telemetry.stop(tracing)
    result["search_context_ms"] = {
        "rows": args.rows,
        "queries": args.queries,
        **asyncio.run(search_ms(args.rows, args.queries)),
    }
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000, help="facts of the searched tenant")
    parser.add_argument("--queries", type=int, default=300, help="context requests timed")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args()
    result = main(args)
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"sdk headers    ns/publish  off {result['sdk_headers_ns']['off']:8.0f}"
            f"   on {result['sdk_headers_ns']['on']:8.0f}"
        )
        print(
            f"batch record   ns/record   off {result['batch_record_ns']['off']:8.0f}"
            f"   on {result['batch_record_ns']['on']:8.0f}"
        )
        s = result.get("search_context_ms")
        if s:
            print(
                f"search context ms ({s['rows']} rows, {s['queries']} queries)"
                f"  off p50 {s['off']['p50']:.3f} mean {s['off']['mean']:.3f}"
                f"   on p50 {s['on']['p50']:.3f} mean {s['on']['mean']:.3f}"
            )
