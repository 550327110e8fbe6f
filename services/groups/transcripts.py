"""transcripts group: `TurnRecorded` → transcript, working buffer, session vector →
`MemoryChanged`."""

from __future__ import annotations

from faststream.kafka import KafkaBroker

from schemas import topics
from schemas.events import TurnRecorded
from services.runtime import Runtime
from services.stream.consumers import ChangeAnnouncer, on_event

GROUP = "transcripts"


def register(broker: KafkaBroker, rt: Runtime) -> None:
    changes = ChangeAnnouncer(broker, GROUP)

    async def record(event: TurnRecorded) -> None:
        await rt.recorder.record(event)
        # announced even when the turn was already stored: a crash between the write and
        # this publish must not leave caches stale after the redelivery
        scope = event.scope.model_copy(update={"thread_id": event.thread_id})
        await changes.announce(event, scope, ["working", "scene", "vectors"])

    on_event(broker, rt, topics.TURNS, GROUP, TurnRecorded, record, name="on_turn_recorded")
