"""facts group: `MemoryRemembered` → one deduplicated `fact` row → `MemoryChanged`.

(Asynchronous fact extraction from post_turn events joins this group in a later issue.)
"""

from __future__ import annotations

from faststream.kafka import KafkaBroker

from schemas import topics
from schemas.events import MemoryRemembered
from services.consumers import ChangeAnnouncer, on_event
from services.runtime import Runtime

GROUP = "facts"


def register(broker: KafkaBroker, rt: Runtime) -> None:
    changes = ChangeAnnouncer(broker, GROUP)

    async def remember(event: MemoryRemembered) -> None:
        await rt.rememberer.remember(event)
        await changes.announce(event, event.scope, ["graph", "vectors"])

    on_event(
        broker,
        rt,
        topics.REMEMBER,
        GROUP,
        MemoryRemembered,
        remember,
        name="on_memory_remembered",
    )
