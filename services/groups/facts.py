"""facts group: stores what the extraction group read (`FactsExtracted` → facts,
entities, relations, contradictions resolved) and explicit remembers (`MemoryRemembered` →
one deduplicated fact), then announces `MemoryChanged`."""

from __future__ import annotations

from faststream.kafka import KafkaRouter

from schemas import topics
from schemas.events import FactsExtracted, MemoryRemembered
from services.runtime import Runtime
from services.stream.batches import one_by_one
from services.stream.consumers import GroupRouter
from services.stream.metrics import Metrics

GROUP = "facts"


def router(rt: Runtime, metrics: Metrics | None) -> KafkaRouter:
    group = GroupRouter(GROUP, rt, metrics)

    async def remember(event: MemoryRemembered) -> None:
        await rt.rememberer.remember(event)
        await group.changes.announce(event, event.scope, ["graph", "vectors"])

    group.on_events(
        topics.REMEMBER,
        MemoryRemembered,
        one_by_one(remember),
        name="on_memory_remembered",
        part="remember",
    )

    async def store(event: FactsExtracted) -> None:
        await rt.facts.store(event)
        await group.changes.announce(event, event.scope, ["graph", "vectors"])

    group.on_events(topics.FACTS, FactsExtracted, one_by_one(store), name="on_facts_extracted")
    return group.router
