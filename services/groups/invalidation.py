"""invalidation group: `MemoryChanged` → bump the written scope's namespace chain."""

from __future__ import annotations

from faststream.kafka import KafkaRouter

from engine.retrieval.search import invalidate
from schemas import topics
from schemas.events import MemoryChanged
from services.runtime import Runtime
from services.stream.consumers import GroupRouter
from services.stream.metrics import Metrics

GROUP = "invalidation"


def router(rt: Runtime, metrics: Metrics | None) -> KafkaRouter:
    group = GroupRouter(GROUP, rt, metrics)

    async def bump(event: MemoryChanged) -> None:
        await invalidate(rt.cache, event.scope, rt.search_policy)

    group.on_event(topics.CHANGED, MemoryChanged, bump, name="on_memory_changed", interactive=True)
    return group.router
