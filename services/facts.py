"""facts group: `MemoryRemembered` → one deduplicated `fact` row → `MemoryChanged`.

(Asynchronous fact extraction from post_turn events joins this group in a later issue.)
"""

from __future__ import annotations

from faststream.kafka import KafkaBroker
from faststream.kafka.annotations import KafkaMessage

from schemas import topics
from schemas.events import MemoryChanged, MemoryRemembered
from services.consumers import subscriber
from services.dlq import consume
from services.runtime import Runtime

GROUP = "facts"


def register(broker: KafkaBroker, rt: Runtime) -> None:
    changed = broker.publisher(topics.CHANGED)

    async def work(event: MemoryRemembered) -> None:
        await rt.rememberer.remember(event)
        await changed.publish(
            MemoryChanged(
                occurred_at=event.occurred_at,
                scope=event.scope,
                layers=["graph", "vectors"],
                cause_event_id=event.event_id,
                producer=GROUP,
            ),
            key=event.scope.agent_wallet.encode(),
        )

    @subscriber(broker, rt, topics.REMEMBER, GROUP)
    async def on_memory_remembered(message: KafkaMessage) -> None:
        await consume(
            broker,
            message,
            group=rt.group_id(GROUP),
            contract=MemoryRemembered,
            work=work,
            attempts=rt.settings.max_attempts,
            backoff_ms=rt.settings.retry_backoff_ms,
        )
