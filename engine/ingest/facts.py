"""Storing what the extractor read: facts, entities and relations, idempotent and in event
time, with contradictions resolved over time.

* **Facts** are `source: "fact"` memory rows whose id is the fact hash (agent, user,
  normalised text, and mode/hai when set), so the same fact stored twice — two threads, two
  consumers, a replay — is one row: the `_id` is the unique index.
* **Contradictions.** A fact may name a single-valued `slot` ("residence", "employer",
  "preference:coffee"). Facts of one tenant that share a slot are the same thing said at
  different times: ordered by when they were said, each one is valid until the next one
  (`invalidAt` = the successor's time, `supersededBy` = its id, status `superseded`), and
  the newest is current. Nothing is deleted. The chain is recomputed from all the slot's
  facts each time one lands, so the outcome does not depend on arrival order (replays and
  out-of-order partitions converge to the same rows).
* **Entities** are `source: "entity"` memory rows (embedded "Name (type): summary"), one per
  normalised name per tenant; the user is the implicit node "user" and has no row.
* **Relations** link two entities with a type (`LIVES_IN`, `SISTER_OF`, …), one per
  (source, type, target) per tenant; of a single-valued type (`LIVES_IN`, `WORKS_AT`, …)
  only the newest per source is current, older ones keep their `invalidAt`.
* **Evidence** (issue 32, `engine.derivation`): every entity row and relation records the
  memory item it was read from (a turn's turn row, or the remembered fact's row) with that
  item's words; a row another item names again gains that item's evidence too, so forgetting
  an item forgets what the graph read from it (`engine.upkeep.derived`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from itertools import zip_longest

from engine.derivation import DERIVED_FROM, SOURCES, Attachment, Evidence, GraphSources
from engine.errors import EmbeddingFailed
from engine.history import change, validity
from engine.ingest.remember import fact_hash
from engine.ingest.turns import PENDING, KnownVectors
from engine.ports import Embedder, ItemHistory, MemoryStore, RelationStore, Vector
from engine.records import (
    Cause,
    ItemChange,
    MemoryRow,
    RelationRecord,
    ScopeFields,
    turn_row_id,
)
from engine.scoping import TenantFilter, scope_fields
from schemas.events import EntityItem, FactItem, FactsExtracted
from schemas.ids import h32, to_ms

USER_NODE = "user"
SINGLE_VALUED_RELATIONS = frozenset(
    {"LIVES_IN", "WORKS_AT", "WORKS_AS", "MARRIED_TO", "PARTNER_OF", "BORN_IN", "STUDIES_AT"}
)
"""Relation types an entity has one of at a time: a newer one of the same type from the same
source replaces the older (it gets `invalidAt`), like a slotted fact."""
_NOT_WORD = re.compile(r"[^\w\s-]", re.UNICODE)
_SPACES = re.compile(r"\s+")


def normalise_name(name: str) -> str:
    """Case-, punctuation- and space-insensitive form of an entity name."""
    return _SPACES.sub(" ", _NOT_WORD.sub(" ", name.lower())).strip()


def entity_id(scope: ScopeFields, name: str) -> str:
    """The id of a tenant's entity, from its normalised name."""
    parts = [scope.agent_wallet, scope.user_address, scope.mode, scope.hai_id, normalise_name(name)]
    return "ent_" + h32(json.dumps(parts))


def entity_text(entity: EntityItem) -> str:
    summary = entity.summary.strip()
    return f"{entity.name} ({entity.type})" + (f": {summary}" if summary else "")


@dataclass(frozen=True, slots=True)
class FactsStored:
    facts_inserted: int
    entities_inserted: int
    relations_inserted: int
    slots_resolved: int
    pending: dict[str, str] = field(default_factory=dict)
    """Rows written without their vector (id → text), for the `embeddings` group."""


@dataclass(slots=True)
class FactWriter:
    memory: MemoryStore
    relations: RelationStore
    embedder: Embedder
    known: KnownVectors | None = None
    """With it (the deferred embedding stage), a text with no stored vector is written at
    once with a pending vector (`FactsStored.pending`); without it, it is embedded first."""
    history: ItemHistory | None = None
    """Where the facts' and entities' creation, return and validity changes are recorded
    (None: not recorded), caused by the `FactsExtracted` event."""
    graph: GraphSources | None = None
    """Where an entity row or relation that exists already gains the evidence of another
    item (`engine.derivation`; None: only new rows record theirs)."""

    async def _note(self, changes: list[ItemChange]) -> None:
        if self.history is not None and changes:
            await self.history.record(changes)

    async def _vectors(self, texts: list[str]) -> list[Vector | None]:
        if not texts:
            return []
        found: list[Vector | None] = []
        if self.known is not None:
            found = await self.known(texts)
        else:
            found.extend(await self.embedder.embed(texts, "document"))
        if len(found) != len(texts):  # never store a vector that may be another text's
            raise EmbeddingFailed(
                f"the embedder returned {len(found)} vectors for {len(texts)} texts"
            )
        return found

    async def store(self, event: FactsExtracted, source: str | None = None) -> FactsStored:
        """Store what `event` read from the memory item `source` (None: the turn's session
        row); every entity row and relation records that item with its words as evidence."""
        at = to_ms(event.occurred_at)
        scope = event.scope
        fields = scope_fields(scope)
        item = source or derived_from(event)
        cause = Cause("event", event.event_id, "FactsExtracted", f"extractor:{event.extractor}")
        notes: list[ItemChange] = []
        facts = {
            "fact_"
            + fact_hash(scope.agent_wallet, scope.user_address, f.text, scope.mode, scope.hai_id): f
            for f in event.facts
        }
        new_facts: dict[str, FactItem] = {}
        for vid, f in facts.items():
            status = await self.memory.status_of(vid)
            if status is None:
                new_facts[vid] = f
            elif status == "deleted" and await self.memory.revive(vid, at):
                # re-stated after a delete: it returns (fixes §16.13)
                notes.append(change(vid, fields, "restored", cause, at, details={"restated": True}))
        entities = {
            entity_id(fields, e.name): e
            for e in event.entities
            if normalise_name(e.name) not in ("", USER_NODE)
        }
        new_entities = {eid: e for eid, e in entities.items() if not await self.memory.exists(eid)}
        texts = [f.text for f in new_facts.values()] + [
            entity_text(e) for e in new_entities.values()
        ]
        vectors = await self._vectors(texts)
        rows = [
            self._fact_row(event, vid, fact, fields, at, vector)
            for (vid, fact), vector in zip(new_facts.items(), vectors, strict=False)
        ] + [
            self._entity_row(event, eid, entity, fields, Evidence(item, entity.summary, at), vector)
            for (eid, entity), vector in zip(
                new_entities.items(), vectors[len(new_facts) :], strict=True
            )
        ]
        pending: dict[str, str] = {}
        inserted: set[str] = set()
        for row in rows:
            if await self.memory.insert_if_absent(row):
                inserted.add(row.vector_id)
                if row.pending:
                    pending[row.vector_id] = row.content
                details = {"source": row.source, "sourceTurnId": event.turn_id}
                notes.append(
                    change(
                        row.vector_id,
                        fields,
                        "created",
                        cause,
                        at,
                        new=row.content,
                        details=details,
                    )
                )
        await self._note(notes)
        tenant = self._tenant(fields)
        for vid, fact in facts.items():
            # A row this event did not write may lack the slot: the same fact remembered
            # explicitly (the facts group's other subscriber, maybe a moment earlier) or
            # extracted once without one. It joins its slot, or the slot's chain would not
            # know it.
            if fact.slot and vid not in inserted:
                await self.memory.set_slot_if_absent(vid, tenant, fact.slot)
        entities_inserted = sum(1 for eid in new_entities if eid in inserted)
        relations_inserted = 0
        # the rows this event wrote hold its evidence already: only those that existed gain it
        attachments = [
            Attachment("entity", eid, Evidence(item, e.summary, at))
            for eid, e in entities.items()
            if eid not in inserted
        ]
        for rel in event.relations:
            source_id, target_id = entity_id(fields, rel.source), entity_id(fields, rel.target)
            relation_id = "rel_" + h32(json.dumps([source_id, rel.type, target_id]))
            said = Evidence(item, rel.evidence, at)
            added = await self.relations.insert_if_absent(
                RelationRecord(
                    relation_id=relation_id,
                    scope=fields,
                    source_id=source_id,
                    source_name=rel.source,
                    type=rel.type,
                    target_id=target_id,
                    target_name=rel.target,
                    created_at=at,
                    metadata={"sourceTurnId": event.turn_id}
                    | ({"evidence": rel.evidence} if rel.evidence else {})
                    | evidence_fields(said),
                )
            )
            relations_inserted += added
            if not added:
                attachments.append(Attachment("relation", relation_id, said))
        if self.graph is not None and attachments:
            await self.graph.attach(attachments)
        slots = sorted({f.slot for f in event.facts if f.slot})
        for slot in slots:
            await self.resolve_slot(fields, slot, cause=cause, at=at)
        kinds = sorted(
            {
                (entity_id(fields, r.source), r.type)
                for r in event.relations
                if r.type in SINGLE_VALUED_RELATIONS
            }
        )
        for source_id, kind in kinds:
            await self.resolve_relation(fields, source_id, kind)
        return FactsStored(
            len(inserted) - entities_inserted,
            entities_inserted,
            relations_inserted,
            len(slots),
            pending,
        )

    def _fact_row(
        self,
        event: FactsExtracted,
        vid: str,
        fact: FactItem,
        fields: ScopeFields,
        at: int,
        vector: Vector | None,
    ) -> MemoryRow:
        metadata = {
            "type": "agent_memory_turn_graph",
            "source": "extraction",
            "layer": "graph",
            "factHash": vid.removeprefix("fact_"),
            "factType": fact.type,
            "confidence": fact.confidence,
            "extractor": event.extractor,
            "sourceTurnId": event.turn_id,
            "sourceSessionId": event.session_id,
        }
        if fact.slot:
            metadata["slot"] = fact.slot
        embedding = _or_pending(vector)
        return MemoryRow(
            vid, fields, fact.text, embedding, self.embedder.model, "fact", at, metadata
        )

    def _entity_row(
        self,
        event: FactsExtracted,
        eid: str,
        entity: EntityItem,
        fields: ScopeFields,
        said: Evidence,
        vector: Vector | None,
    ) -> MemoryRow:
        metadata = {
            "layer": "graph",
            "entityType": entity.type,
            "name": entity.name,
            "normalisedName": normalise_name(entity.name),
            "sourceTurnId": event.turn_id,
            **evidence_fields(said),
        }
        text, embedding = entity_text(entity), _or_pending(vector)
        model, at = self.embedder.model, said.at
        return MemoryRow(eid, fields, text, embedding, model, "entity", at, metadata)

    async def resolve_relation(self, fields: ScopeFields, source_id: str, kind: str) -> None:
        """Only the newest link of a single-valued type stays current (order-independent)."""
        await resolve_relation(self.relations, fields, source_id, kind)

    @staticmethod
    def _tenant(fields: ScopeFields) -> TenantFilter:
        return tenant_of(fields)

    async def resolve_slot(
        self, fields: ScopeFields, slot: str, *, cause: Cause | None = None, at: int = 0
    ) -> None:
        """Recompute the validity chain of one slot of one tenant (see the module doc); each
        row whose validity changed is recorded as `superseded` (with its interval and
        successor) or `reinstated`, caused by `cause` at `at`, when both are given."""
        where = self._tenant(fields)
        rows = [
            r
            for r in await self.memory.slot_rows(where, slot)
            if r.scope.mode == fields.mode and r.scope.hai_id == fields.hai_id
        ]
        rows.sort(key=lambda r: (r.created_at, r.vector_id))
        notes: list[ItemChange] = []
        for row, successor in zip_longest(rows, rows[1:]):  # the newest: successor None
            invalid_at = successor.created_at if successor else None
            by = successor.vector_id if successor else None
            if (row.invalid_at, row.superseded_by) != (invalid_at, by):
                await self.memory.set_validity(row.vector_id, invalid_at, by)
                if cause is not None:
                    kind = "reinstated" if invalid_at is None else "superseded"
                    details = {**validity(row, invalid_at, by), "slot": slot}
                    notes.append(change(row.vector_id, row.scope, kind, cause, at, details=details))
        await self._note(notes)


def derived_from(event: FactsExtracted) -> str:
    """The memory item a turn's extraction was read from: the turn's turn row."""
    return turn_row_id(event.scope.agent_wallet, event.session_id, event.turn_id)


def evidence_fields(said: Evidence) -> dict[str, object]:
    """The evidence of a new graph row, as its metadata holds it (`engine.derivation`)."""
    return {DERIVED_FROM: [said.item], SOURCES: [said.stored()]}


def tenant_of(fields: ScopeFields) -> TenantFilter:
    return TenantFilter(
        agent_wallet=fields.agent_wallet,
        user_address=fields.user_address,
        mode=fields.mode,
        hai_id=fields.hai_id,
    )


async def resolve_relation(
    relations: RelationStore, fields: ScopeFields, source_id: str, kind: str
) -> None:
    """Only the newest link of a single-valued type from `source_id` stays current, whatever
    order they came in (also after one was removed: the one before it is current again)."""
    rows = await relations.from_source(tenant_of(fields), source_id, kind)
    rows.sort(key=lambda r: (r.created_at, r.relation_id))
    for row, successor in zip_longest(rows, rows[1:]):  # the newest: successor None
        invalid_at = successor.created_at if successor else None
        if row.invalid_at != invalid_at:
            await relations.set_validity(row.relation_id, invalid_at)


def _or_pending(vector: Vector | None) -> Vector:
    return vector if vector is not None else PENDING
