"""transcripts group: batches of `TurnRecorded` → transcripts, working buffers and session
rows (a few bulk writes per batch, `TurnRecorder.record_many`) → `EmbeddingRequested` for the
rows stored without a vector (the `embeddings` group fills them) → one `MemoryChanged` per
written thread."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from faststream.kafka import KafkaRouter

from engine.ingest.turns import TurnStored
from schemas import topics
from schemas.events import EmbeddingRequested, TurnRecorded, VectorTarget
from services.runtime import Runtime
from services.stream.consumers import Changes, GroupRouter
from services.stream.metrics import Metrics
from services.stream.sealing import SealedPublisher
from services.stream.telemetry import within

GROUP = "transcripts"
LAYERS = ["working", "scene", "vectors"]


def vector_requests(
    events: Sequence[TurnRecorded], stored: Sequence[TurnStored], model: str
) -> list[EmbeddingRequested]:
    """One request per tenant and thread for the turns stored without a vector. A thread id
    may be shared by several users of an agent: each target is written under its request's
    scope, so turns of different tenants never share a request."""
    grouped: dict[tuple[str, str], tuple[TurnRecorded, list[VectorTarget]]] = {}
    for event, turn in zip(events, stored, strict=True):
        if not turn.pending:
            continue
        tenant = (event.scope.model_dump_json(), event.thread_id)
        _, targets = grouped.setdefault(tenant, (event, []))
        targets.append(
            VectorTarget(
                vector_id=turn.vector_id,
                text=turn.content,
                turn_id=event.turn_id,
            )
        )
    return [
        EmbeddingRequested(
            occurred_at=event.occurred_at,
            scope=event.scope,
            thread_id=event.thread_id,
            model=model,
            targets=targets,
        )
        for event, targets in grouped.values()
    ]


def key(request: EmbeddingRequested) -> bytes:
    return topics.thread_key(request.thread_id).encode()


def router(rt: Runtime, metrics: Metrics | None) -> KafkaRouter:
    group = GroupRouter(GROUP, rt, metrics)
    wanted = SealedPublisher(group.router.publisher(topics.EMBEDDINGS), rt.sealer)

    async def record(events: list[TurnRecorded]) -> None:
        stored = await rt.recorder.record_many(events)
        requests = vector_requests(events, stored, rt.embedder.model)
        first = {e.turn_id: e for e in reversed(events)}  # a request's trace: its first turn's
        await asyncio.gather(
            *(
                within(first.get(r.targets[0].turn_id or ""), wanted.publish(r, key=key(r)))
                for r in requests
            )
        )
        changes = Changes()
        for event in events:
            # announced even when the turn was already stored: a crash between the write and
            # this publish must not leave caches stale after the redelivery
            changes.add(
                event, event.scope.model_copy(update={"thread_id": event.thread_id}), LAYERS
            )
        await group.changes.announce_all(changes)

    group.on_events(topics.TURNS, TurnRecorded, record, name="on_turn_recorded")
    return group.router
