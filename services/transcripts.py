"""transcripts group: `TurnRecorded` → transcript, working buffer, session vector →
`MemoryChanged`."""

from __future__ import annotations

from faststream.kafka import KafkaBroker
from faststream.kafka.annotations import KafkaMessage

from schemas import topics
from schemas.events import MemoryChanged, TurnRecorded
from services.consumers import subscriber
from services.dlq import consume
from services.runtime import Runtime

GROUP = "transcripts"


def register(broker: KafkaBroker, rt: Runtime) -> None:
    changed = broker.publisher(topics.CHANGED)

    async def work(event: TurnRecorded) -> None:
        await rt.recorder.record(event)
        # announced even when the turn was already stored: a crash between the write and
        # this publish must not leave caches stale after the redelivery
        scope = event.scope.model_copy(update={"thread_id": event.thread_id})
        await changed.publish(
            MemoryChanged(
                occurred_at=event.occurred_at,
                scope=scope,
                layers=["working", "scene", "vectors"],
                cause_event_id=event.event_id,
                producer=GROUP,
            ),
            key=event.scope.agent_wallet.encode(),
        )

    @subscriber(broker, rt, topics.TURNS, GROUP)
    async def on_turn_recorded(message: KafkaMessage) -> None:
        await consume(
            broker,
            message,
            group=rt.group_id(GROUP),
            contract=TurnRecorded,
            work=work,
            attempts=rt.settings.max_attempts,
            backoff_ms=rt.settings.retry_backoff_ms,
        )
