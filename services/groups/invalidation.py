"""invalidation group: batches of `MemoryChanged` → bump each written scope's namespace chain
once per batch."""

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

    async def bump(events: list[MemoryChanged]) -> None:
        # a batch often names one scope many times (a thread's turns): bump each once
        scopes = {e.scope.model_dump_json(): e.scope for e in events}
        for scope in scopes.values():
            await invalidate(rt.cache, scope, rt.search_policy)

    group.on_events(topics.CHANGED, MemoryChanged, bump, name="on_memory_changed", interactive=True)
    return group.router
