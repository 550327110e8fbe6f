"""invalidation group: `MemoryChanged` → bump the written scope's namespace chain."""

from __future__ import annotations

from faststream.kafka import KafkaBroker
from faststream.kafka.annotations import KafkaMessage

from engine.context import invalidate
from schemas import topics
from schemas.events import MemoryChanged
from services.consumers import subscriber
from services.dlq import consume
from services.runtime import Runtime

GROUP = "invalidation"


def register(broker: KafkaBroker, rt: Runtime) -> None:
    async def work(event: MemoryChanged) -> None:
        await invalidate(rt.search.cache, event.scope, rt.search.policy)

    @subscriber(broker, rt, topics.CHANGED, GROUP, interactive=True)
    async def on_memory_changed(message: KafkaMessage) -> None:
        await consume(
            broker,
            message,
            group=rt.group_id(GROUP),
            contract=MemoryChanged,
            work=work,
            attempts=rt.settings.max_attempts,
            backoff_ms=rt.settings.retry_backoff_ms,
        )
