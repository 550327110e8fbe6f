"""facts group: stores what the extraction group read (`FactsExtracted` → facts,
entities, relations, contradictions resolved; texts without a stored vector are written at
once and their vectors asked of the `embeddings` group) and explicit remembers (`MemoryRemembered` →
one deduplicated fact, and the entities and relations its text names), then announces
`MemoryChanged`."""

from __future__ import annotations

import logging

from faststream.kafka import KafkaRouter

from engine.errors import DependencyFailed
from engine.ingest.extraction.relation_typer import RelationTyper
from engine.ingest.remember import remembered_links
from schemas import topics
from schemas.events import EmbeddingRequested, FactsExtracted, MemoryRemembered, VectorTarget
from services.runtime import Runtime
from services.stream.batches import one_by_one
from services.stream.consumers import GroupRouter
from services.stream.metrics import Metrics
from services.stream.sealing import SealedPublisher

GROUP = "facts"
log = logging.getLogger(__name__)


def router(rt: Runtime, metrics: Metrics | None) -> KafkaRouter:
    group = GroupRouter(GROUP, rt, metrics)
    typer = RelationTyper(rt.embedder)  # a remembered text's links typed as a turn's
    wanted = SealedPublisher(group.router.publisher(topics.EMBEDDINGS), rt.sealer)

    async def stored(event: FactsExtracted, source: str | None = None) -> None:
        """Store what was extracted (from the memory item `source`, None: the event's
        turn); ask the embeddings group for the missing vectors."""
        found = await rt.facts.store(event, source)
        if found.pending:  # the embeddings group fills their vectors
            targets = [VectorTarget(vector_id=i, text=t) for i, t in found.pending.items()]
            await wanted.publish(
                EmbeddingRequested(
                    occurred_at=event.occurred_at,
                    scope=event.scope,
                    model=rt.embedder.model,
                    targets=targets,
                ),
                key=topics.agent_key(event.scope.agent_wallet).encode(),
            )

    async def remember(event: MemoryRemembered) -> None:
        fact = await rt.rememberer.remember(event)
        extractor = rt.extractor
        if extractor is not None:
            try:
                links = await remembered_links(event, extractor, rt.extraction_policy, typer)
            except DependencyFailed as exc:
                # the fact is stored; only its graph links wait for the next remember
                log.warning("remember %s: no graph links (%s)", event.event_id, exc)
                links = None
            if links is not None:  # read from the fact's row: forgotten with it
                await stored(links, fact.vector_id)
        await group.changes.announce(event, event.scope, ["graph", "vectors"])

    group.on_events(
        topics.REMEMBER,
        MemoryRemembered,
        one_by_one(remember),
        name="on_memory_remembered",
        part="remember",
    )

    async def store(event: FactsExtracted) -> None:
        await stored(event)
        await group.changes.announce(event, event.scope, ["graph", "vectors"])

    group.on_events(topics.FACTS, FactsExtracted, one_by_one(store), name="on_facts_extracted")
    return group.router
