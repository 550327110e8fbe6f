"""In-memory `GraphSources` (`engine.derivation`; the contract suite's twin of
`engine.adapters.mongo.graph_sources`) over the rows of an in-memory memory store (entity
rows) and relation store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from engine.adapters.memory.memory_rows import InMemoryMemoryStore
from engine.adapters.memory.relations import InMemoryRelationStore
from engine.derivation import DERIVED_FROM, MAX_EVIDENCE, SOURCES, Attachment, DerivedRows
from engine.records import Vector
from engine.scoping import TenantFilter


def _with(metadata: Mapping[str, Any], attachment: Attachment) -> dict[str, Any] | None:
    """The metadata with the evidence added, or None when the item is there already (or
    the row was written before the bookkeeping: it is left as it is)."""
    if DERIVED_FROM not in metadata:
        return None
    held = list(metadata.get(DERIVED_FROM) or [])
    item = attachment.evidence.item
    if item in held or len(held) >= MAX_EVIDENCE:
        return None
    sources = [*list(metadata.get(SOURCES) or []), attachment.evidence.stored()]
    return {**metadata, DERIVED_FROM: [*held, item], SOURCES: sources}


def _without(metadata: Mapping[str, Any], items: set[str]) -> dict[str, Any] | None:
    """The metadata without these items' evidence, or None when it holds none of them."""
    held = list(metadata.get(DERIVED_FROM) or [])
    if not items & set(held):
        return None
    sources = [e for e in metadata.get(SOURCES) or [] if e.get("item") not in items]
    return {**metadata, DERIVED_FROM: [i for i in held if i not in items], SOURCES: sources}


class InMemoryGraphSources:
    def __init__(self, memory: InMemoryMemoryStore, relations: InMemoryRelationStore) -> None:
        self._memory = memory
        self._relations = relations

    async def attach(self, attachments: Sequence[Attachment]) -> None:
        for a in attachments:
            if a.kind == "entity":
                row = self._memory.row(a.row_id)
                if row is not None and (metadata := _with(row.metadata, a)) is not None:
                    self._memory.put(replace(row, metadata=metadata))
                continue
            rel = self._relations.row(a.row_id)
            if rel is not None and (metadata := _with(rel.metadata, a)) is not None:
                self._relations.put(replace(rel, metadata=metadata))

    async def detach(self, where: TenantFilter, item_ids: Sequence[str]) -> DerivedRows:
        exact, items = where.exact(), set(item_ids)
        out = DerivedRows([], [])
        for row in self._memory.rows():
            if exact.admits(row.scope) and (metadata := _without(row.metadata, items)):
                after = replace(row, metadata=metadata)
                self._memory.put(after)
                out.entities.append(after)
        for rel in self._relations.rows():
            if exact.admits(rel.scope) and (metadata := _without(rel.metadata, items)):
                moved = replace(rel, metadata=metadata)
                self._relations.put(moved)
                out.relations.append(moved)
        return out

    async def drop_bare(
        self, where: TenantFilter, entity_ids: Sequence[str], relation_ids: Sequence[str]
    ) -> tuple[list[str], list[str]]:
        exact = where.exact()
        entities: list[str] = []
        for i in dict.fromkeys(entity_ids):
            row = self._memory.row(i)
            if row is not None and exact.admits(row.scope) and not row.metadata.get(SOURCES):
                self._memory.drop(i)
                entities.append(i)
        relations: list[str] = []
        for i in dict.fromkeys(relation_ids):
            rel = self._relations.row(i)
            if rel is not None and exact.admits(rel.scope) and not rel.metadata.get(SOURCES):
                self._relations.drop(i)
                relations.append(i)
        return entities, relations

    async def show_entity(
        self, where: TenantFilter, entity_id: str, content: str, embedding: Vector, model: str
    ) -> None:
        row = self._memory.row(entity_id)
        if row is not None and where.exact().admits(row.scope):
            self._memory.put(
                replace(row, content=content, embedding=embedding, embedding_model=model)
            )

    async def show_relation(
        self, where: TenantFilter, relation_id: str, evidence: str, created_at: int
    ) -> None:
        rel = self._relations.row(relation_id)
        if rel is not None and where.exact().admits(rel.scope):
            metadata = {**rel.metadata, "evidence": evidence}
            self._relations.put(replace(rel, metadata=metadata, created_at=created_at))
