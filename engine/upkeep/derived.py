"""Forgetting a memory item forgets what the graph read from it (issue 32,
`engine.derivation`).

`forget_derived` runs after an item is deleted (soft or hard): the item's evidence leaves every
graph row that holds it; an entity row or relation left without evidence is removed (a
removed entity row is recorded `purged` in the item history, whose texts are erased); the
others show what their remaining evidence says: an entity row's text is rebuilt from its
oldest remaining evidence (re-embedded when it changed; its earlier history texts, which said
the forgotten words, are erased and the change is recorded `updated` without them), a
relation's sentence and its time from its oldest remaining one. A relation of a single-valued
type that went or changed time has its type's validity chain recomputed, so the link it
had replaced is current again.

Forgetting a user (`engine.upkeep.erasure`) removes every graph row of the user already; a
restored item does not bring back what was forgotten (remembering the text again does).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.derivation import GraphSources, evidence_of, shown
from engine.history import Ledger, change
from engine.ingest.facts import SINGLE_VALUED_RELATIONS, entity_text, resolve_relation
from engine.ports import Embedder, RelationStore
from engine.records import MemoryRow, RelationRecord
from engine.scoping import TenantFilter
from schemas.events import EntityItem


@dataclass(frozen=True, slots=True)
class DerivedForgotten:
    """What forgetting items did to the graph: rows removed and rows that show less."""

    entities_removed: list[str]
    entities_changed: list[str]
    relations_removed: list[str]
    relations_changed: list[str]

    @property
    def touched(self) -> bool:
        return any(
            (
                self.entities_removed,
                self.entities_changed,
                self.relations_removed,
                self.relations_changed,
            )
        )


def _entity_text(row: MemoryRow, summary: str) -> str:
    name = str(row.metadata.get("name") or row.content.split(" (", 1)[0])
    kind = str(row.metadata.get("entityType") or "thing")
    return entity_text(EntityItem(name=name, type=kind, summary=summary))


async def forget_derived(
    graph: GraphSources,
    relations: RelationStore,
    embedder: Embedder,
    where: TenantFilter,
    item_ids: Sequence[str],
    *,
    at: int,
    ledger: Ledger | None = None,
) -> DerivedForgotten:
    """Remove the evidence of `item_ids` (of the filter's exact tenant) from the graph and
    recompute what the rows it leaves show (see the module doc)."""
    rows = await graph.detach(where, item_ids)
    bare_entities = [r.vector_id for r in rows.entities if not evidence_of(r.metadata)]
    bare_relations = [r.relation_id for r in rows.relations if not evidence_of(r.metadata)]
    gone_entities, gone_relations = await graph.drop_bare(where, bare_entities, bare_relations)
    changed = await _reshow_entities(graph, embedder, where, rows.entities)
    moved = await _reshow_relations(graph, where, rows.relations)
    await _revalidate(relations, [r for r in rows.relations if r.relation_id in gone_relations])
    await _revalidate(relations, [r for r in rows.relations if r.relation_id in moved])
    if ledger is not None:
        removed = [r for r in rows.entities if r.vector_id in gone_entities]
        await ledger.purged([(r.vector_id, r.scope) for r in removed], at)
        reshown = [r for r in rows.entities if r.vector_id in changed]
        if reshown:
            await ledger.history.forget(where.exact(), [r.vector_id for r in reshown])
            details = {"forgottenSources": len(set(item_ids))}
            await ledger.note(
                [
                    change(r.vector_id, r.scope, "updated", ledger.cause, at, details=details)
                    for r in reshown
                ]
            )
    return DerivedForgotten(gone_entities, changed, gone_relations, moved)


async def _reshow_entities(
    graph: GraphSources, embedder: Embedder, where: TenantFilter, rows: Sequence[MemoryRow]
) -> list[str]:
    """Entity rows whose text their remaining evidence changes, rewritten; their ids."""
    texts: dict[str, str] = {}
    for row in rows:
        oldest = shown(evidence_of(row.metadata))
        if oldest is None:
            continue
        text = _entity_text(row, oldest.text)
        if text != row.content:
            texts[row.vector_id] = text
    if not texts:
        return []
    vectors = await embedder.embed(list(texts.values()), "document")
    for (vector_id, text), vector in zip(texts.items(), vectors, strict=True):
        await graph.show_entity(where, vector_id, text, vector, embedder.model)
    return list(texts)


async def _reshow_relations(
    graph: GraphSources, where: TenantFilter, rows: Sequence[RelationRecord]
) -> list[str]:
    """Relations whose sentence or time their remaining evidence changes, rewritten; ids."""
    moved: list[str] = []
    for rel in rows:
        oldest = shown(evidence_of(rel.metadata))
        if oldest is None:
            continue
        said = rel.metadata.get("evidence") or ""
        if (oldest.text, oldest.at) != (said, rel.created_at):
            await graph.show_relation(where, rel.relation_id, oldest.text, oldest.at)
            moved.append(rel.relation_id)
    return moved


async def _revalidate(relations: RelationStore, rows: Sequence[RelationRecord]) -> None:
    chains = {(r.scope, r.source_id, r.type): r for r in rows if r.type in SINGLE_VALUED_RELATIONS}
    for scope, source_id, kind in chains:
        await resolve_relation(relations, scope, source_id, kind)
