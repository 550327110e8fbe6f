"""Explicit remember (reference §7.4), deduplicated.

A remembered fact becomes a `source: "fact"` memory row whose id is derived from
`factHash = H32(agent | lower(user or "_") | lower(trim(text)) [| mode | hai])`, so remembering
the same fact
twice (or redelivering the event) keeps one row: the reference never deduplicated this path
(§16.13). Caller metadata cannot override system keys (§16.27).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.ingest.extraction.types import FACT_TYPES
from engine.ports import Embedder, MemoryStore
from engine.records import MemoryRow
from engine.scoping import scope_fields
from schemas.events import MemoryRemembered
from schemas.ids import h32, to_ms

SYSTEM_KEYS = frozenset(
    {
        "type",
        "source",
        "layer",
        "status",
        "factHash",
        "factType",
        "extractor",
        "confidence",
        "retention",
        "scope",
        "conflictPolicy",
        "eventId",
    }
)


def fact_hash(
    agent: str, user: str | None, text: str, mode: str | None = None, hai: str | None = None
) -> str:
    """The dedupe key of a fact within a tenant (case- and edge-space-insensitive text).

    Mode and hai are part of it when set: a fact remembered in two visibility scopes is two
    rows, each visible where it was said (one shared row would be visible in only one)."""
    base = f"{agent}|{(user or '_').lower()}|{text.strip().lower()}"
    if mode is not None or hai is not None:
        base += f"|{mode or '_'}|{hai or '_'}"
    return h32(base)


@dataclass(frozen=True, slots=True)
class FactStored:
    vector_id: str
    inserted: bool


@dataclass(slots=True)
class Rememberer:
    memory: MemoryStore
    embedder: Embedder

    async def remember(self, event: MemoryRemembered) -> FactStored:
        scope = event.scope
        digest = fact_hash(
            scope.agent_wallet, scope.user_address, event.content, scope.mode, scope.hai_id
        )
        vector_id = "fact_" + digest
        status = await self.memory.status_of(vector_id)
        if status == "deleted":  # remembered again after a delete: it returns (fixes §16.13)
            return FactStored(
                vector_id, await self.memory.revive(vector_id, to_ms(event.occurred_at))
            )
        if status is not None:
            return FactStored(vector_id, inserted=False)
        [embedding] = await self.embedder.embed([event.content], "document")
        caller = {k: v for k, v in event.metadata.items() if k not in SYSTEM_KEYS}
        metadata = {
            **caller,
            "type": event.type,
            "source": "agent_loop",
            "layer": "graph",
            "factHash": digest,
            "factType": event.type if event.type in FACT_TYPES else "context",
            "confidence": event.confidence,
            "extractor": "explicit",
            "eventId": event.event_id,
        }
        for key, value in (
            ("retention", event.retention),
            ("scope", event.memory_scope),
            ("conflictPolicy", event.conflict_policy),
        ):
            if value is not None:
                metadata[key] = value
        inserted = await self.memory.insert_if_absent(
            MemoryRow(
                vector_id=vector_id,
                scope=scope_fields(scope),
                content=event.content,
                embedding=embedding,
                embedding_model=self.embedder.model,
                source="fact",
                created_at=to_ms(event.occurred_at),
                metadata=metadata,
            )
        )
        return FactStored(vector_id, inserted)
