"""transcripts group: batches of `TurnRecorded` → transcripts, working buffers and session
rows (a few bulk writes per batch, `TurnRecorder.record_many`) → `EmbeddingRequested` for the
rows stored without a vector (the `embeddings` group fills them) → one `MemoryChanged` per
written thread."""

from __future__ import annotations

import asyncio

from faststream.kafka import KafkaRouter

from schemas import topics
from schemas.events import EmbeddingRequested, TurnRecorded, VectorTarget
from services.runtime import Runtime
from services.stream.consumers import Changes, GroupRouter
from services.stream.metrics import Metrics

GROUP = "transcripts"
LAYERS = ["working", "scene", "vectors"]


def router(rt: Runtime, metrics: Metrics | None) -> KafkaRouter:
    group = GroupRouter(GROUP, rt, metrics)
    wanted = group.router.publisher(topics.EMBEDDINGS)

    async def record(events: list[TurnRecorded]) -> None:
        stored = await rt.recorder.record_many(events)
        requests: dict[str, tuple[TurnRecorded, list[VectorTarget]]] = {}
        changes = Changes()
        for event, turn in zip(events, stored, strict=True):
            if turn.pending:
                _, targets = requests.setdefault(turn.working_session_id, (event, []))
                targets.append(
                    VectorTarget(
                        vector_id=turn.vector_id,
                        text=turn.content,
                        turn_id=event.turn_id,
                        session_id=turn.session_id,
                        working_session_id=turn.working_session_id,
                    )
                )
            # announced even when the turn was already stored: a crash between the write and
            # this publish must not leave caches stale after the redelivery
            changes.add(
                event, event.scope.model_copy(update={"thread_id": event.thread_id}), LAYERS
            )
        await asyncio.gather(
            *(
                wanted.publish(
                    EmbeddingRequested(
                        occurred_at=event.occurred_at,
                        scope=event.scope,
                        thread_id=event.thread_id,
                        model=rt.embedder.model,
                        targets=targets,
                    ),
                    key=thread.encode(),
                )
                for thread, (event, targets) in requests.items()
            )
        )
        await group.changes.announce_all(changes)

    group.on_events(topics.TURNS, TurnRecorded, record, name="on_turn_recorded")
    return group.router
