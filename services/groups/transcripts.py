"""transcripts group: `TurnRecorded` → transcript, working buffer, session vector →
`MemoryChanged`."""

from __future__ import annotations

from faststream.kafka import KafkaRouter

from schemas import topics
from schemas.events import TurnRecorded
from services.runtime import Runtime
from services.stream.consumers import GroupRouter
from services.stream.metrics import Metrics

GROUP = "transcripts"


def router(rt: Runtime, metrics: Metrics | None) -> KafkaRouter:
    group = GroupRouter(GROUP, rt, metrics)

    async def record(event: TurnRecorded) -> None:
        await rt.recorder.record(event)
        # announced even when the turn was already stored: a crash between the write and
        # this publish must not leave caches stale after the redelivery
        scope = event.scope.model_copy(update={"thread_id": event.thread_id})
        await group.changes.announce(event, scope, ["working", "scene", "vectors"])

    group.on_event(topics.TURNS, TurnRecorded, record, name="on_turn_recorded")
    return group.router
