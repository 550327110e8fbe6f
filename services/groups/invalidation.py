"""invalidation group: `MemoryChanged` → bump the written scope's namespace chain."""

from __future__ import annotations

from faststream.kafka import KafkaBroker

from engine.retrieval.search import invalidate
from schemas import topics
from schemas.events import MemoryChanged
from services.runtime import Runtime
from services.stream.consumers import on_event

GROUP = "invalidation"


def register(broker: KafkaBroker, rt: Runtime) -> None:
    async def bump(event: MemoryChanged) -> None:
        await invalidate(rt.cache, event.scope, rt.search_policy)

    on_event(
        broker,
        rt,
        topics.CHANGED,
        GROUP,
        MemoryChanged,
        bump,
        name="on_memory_changed",
        interactive=True,
    )
