"""facts group: stores what the extraction group read (`FactsExtracted` → facts,
entities, relations, contradictions resolved) and explicit remembers (`MemoryRemembered` →
one deduplicated fact), then announces `MemoryChanged`."""

from __future__ import annotations

from faststream.kafka import KafkaBroker

from schemas import topics
from schemas.events import FactsExtracted, MemoryRemembered
from services.runtime import Runtime
from services.stream.consumers import ChangeAnnouncer, on_event

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
        part="remember",
    )

    async def store(event: FactsExtracted) -> None:
        await rt.facts.store(event)
        await changes.announce(event, event.scope, ["graph", "vectors"])

    on_event(broker, rt, topics.FACTS, GROUP, FactsExtracted, store, name="on_facts_extracted")
