"""facts group: stores what the extraction group read (`FactsExtracted` → facts,
entities, relations, contradictions resolved; texts without a stored vector are written at
once and their vectors asked of the `embeddings` group) and explicit remembers (`MemoryRemembered` →
one deduplicated fact), then announces `MemoryChanged`."""

from __future__ import annotations

from faststream.kafka import KafkaRouter

from schemas import topics
from schemas.events import EmbeddingRequested, FactsExtracted, MemoryRemembered, VectorTarget
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

    wanted = group.router.publisher(topics.EMBEDDINGS)

    async def store(event: FactsExtracted) -> None:
        stored = await rt.facts.store(event)
        if stored.pending:  # the embeddings group fills their vectors
            targets = [VectorTarget(vector_id=i, text=t) for i, t in stored.pending.items()]
            await wanted.publish(
                EmbeddingRequested(
                    occurred_at=event.occurred_at,
                    scope=event.scope,
                    model=rt.embedder.model,
                    targets=targets,
                ),
                key=event.scope.agent_wallet.encode(),
            )
        await group.changes.announce(event, event.scope, ["graph", "vectors"])

    group.on_events(topics.FACTS, FactsExtracted, one_by_one(store), name="on_facts_extracted")
    return group.router
