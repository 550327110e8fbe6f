"""Explicit remember (reference §7.4), deduplicated.

A remembered fact becomes a `source: "fact"` memory row whose id is derived from
`factHash = H32(agent | lower(user or "_") | lower(trim(text)) [| mode | hai])`, so remembering
the same fact
twice (or redelivering the event) keeps one row: the reference never deduplicated this path
(§16.13). Caller metadata cannot override system keys (§16.27).

The remembered text is also read by the extractor for its entities and relations
(`remembered_links`, issue 17 §1): "My manager is Dana." is a fact row *and* Dana MANAGER_OF
user in the graph, with the untyped links a turn gets (issue 32). The text itself stays the
one fact: the extractor's rephrasings of it are not stored beside it. Every graph row read
from it records the fact's row as its source, so forgetting the fact forgets them.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.history import change
from engine.ingest.extraction.relation_typer import RelationTyper, link_turn
from engine.ingest.extraction.types import (
    FACT_TYPES,
    ExtractionPolicy,
    Extractor,
    FactType,
    TurnText,
)
from engine.ports import Embedder, ItemHistory, MemoryStore
from engine.records import Cause, MemoryRow
from engine.scoping import scope_fields
from schemas.events import EntityItem, FactsExtracted, MemoryRemembered, RelationItem
from schemas.ids import h32, to_ms


def stored_fact_type(given: str) -> FactType:
    """The fact type a remembered fact is stored with: its own when it is one of
    `FACT_TYPES`, else `"context"` (a remember without a type is an `explicit_save`)."""
    return given if given in FACT_TYPES else "context"


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


REMEMBERED_BY = "agent"
"""The actor of an explicit remember in the item history: the agent that said it."""


@dataclass(slots=True)
class Rememberer:
    memory: MemoryStore
    embedder: Embedder
    history: ItemHistory | None = None
    """Where the facts' creation and return are recorded (None: not recorded)."""

    async def remember(self, event: MemoryRemembered) -> FactStored:
        scope = event.scope
        digest = fact_hash(
            scope.agent_wallet, scope.user_address, event.content, scope.mode, scope.hai_id
        )
        vector_id = "fact_" + digest
        at = to_ms(event.occurred_at)
        cause = Cause("event", event.event_id, "MemoryRemembered", REMEMBERED_BY)
        fields = scope_fields(scope)
        status = await self.memory.status_of(vector_id)
        if status == "deleted":  # remembered again after a delete: it returns (fixes §16.13)
            revived = await self.memory.revive(vector_id, at)
            if revived and self.history is not None:
                restated = change(
                    vector_id, fields, "restored", cause, at, details={"restated": True}
                )
                await self.history.record([restated])
            return FactStored(vector_id, revived)
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
            "factType": stored_fact_type(event.type),
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
                scope=fields,
                content=event.content,
                embedding=embedding,
                embedding_model=self.embedder.model,
                source="fact",
                created_at=at,
                metadata=metadata,
            )
        )
        if inserted and self.history is not None:
            details = {"source": "fact", "type": event.type}
            created = change(
                vector_id, fields, "created", cause, at, new=event.content, details=details
            )
            await self.history.record([created])
        return FactStored(vector_id, inserted)


async def remembered_links(
    event: MemoryRemembered,
    extractor: Extractor,
    policy: ExtractionPolicy,
    typer: RelationTyper | None = None,
) -> FactsExtracted | None:
    """The entities and relations the remembered text names, as a `FactsExtracted`
    without facts (the remembered row is the fact), or None when it names none. The text is
    read as the user's words, as a turn's are: the extractor's typed relations and the
    untyped links around them, each with its sentence, typed where `typer` can, as a turn's
    (issue 32: `relation_typer.link_turn`). Stored with the fact's row
    as their source (`FactWriter.store`), so forgetting the fact forgets them
    (`engine.upkeep.derived`). May raise `DependencyFailed` (a remote extractor)."""
    said = [TurnText("user", event.content)]
    found = await link_turn(said, await extractor.extract(said, policy), typer)
    if not found.relations:
        return None
    return FactsExtracted(
        occurred_at=event.occurred_at,
        scope=event.scope,
        turn_id=f"remember:{event.event_id}",
        session_id="remember",
        extractor=extractor.name,
        entities=[EntityItem(name=e.name, type=e.type, summary=e.summary) for e in found.entities],
        relations=[
            RelationItem(source=r.source, type=r.type, target=r.target, evidence=r.evidence)
            for r in found.relations
        ],
    )
