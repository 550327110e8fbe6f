"""knowledge group: indexes `KnowledgeSubmitted` documents (reference §14) as chunked
`knowledge` rows of the document's tenant, then announces `MemoryChanged` (vectors), so
pre_turn's vectors layer finds the chunks once the cache and vector index have moved on.

A separate group from facts: a long document embeds up to ~160 chunks, which must not
hold up a tenant's facts, and the two scale on their own."""

from __future__ import annotations

from faststream.kafka import KafkaRouter

from engine.history import Ledger
from engine.ingest.knowledge import index_document, rows_scope
from engine.records import Cause
from schemas import topics
from schemas.events import KnowledgeSubmitted
from schemas.ids import to_ms
from services.runtime import Runtime
from services.stream.batches import one_by_one
from services.stream.consumers import GroupRouter
from services.stream.metrics import Metrics

GROUP = "knowledge"


def router(rt: Runtime, metrics: Metrics | None) -> KafkaRouter:
    group = GroupRouter(GROUP, rt, metrics)

    async def index(event: KnowledgeSubmitted) -> None:
        await index_document(
            rt.memory,
            rt.embedder,
            scope=rows_scope(event.scope),
            content=event.content,
            key=event.key,
            source_format=event.source_format,
            uri=event.uri,
            at=to_ms(event.occurred_at),
            metadata=event.metadata,
            ledger=Ledger(
                rt.history, Cause("event", event.event_id, "KnowledgeSubmitted", "agent")
            ),
        )
        await group.changes.announce(event, event.scope.tenant(), ["vectors"])

    group.on_events(
        topics.KNOWLEDGE, KnowledgeSubmitted, one_by_one(index), name="on_knowledge_submitted"
    )
    return group.router
