"""What the graph was read from (issue 32): every graph row derived from a memory item
records that item, so forgetting the item forgets what was derived from it.

The graph rows are the entity rows (`memory`, `source: "entity"`) and the relations (typed
and untyped links). Each one read from an item carries, in its metadata:

* `derivedFrom`: the ids of the memory items it was read from (a remembered fact's row,
  `fact_…`; a turn's turn row, `vec_…`: `engine.records.turn_row_id`);
* `sources`: one `Evidence` per such item: the words of that item the row shows (an
  entity's summary, a link's sentence) and when the item said them.

What a row shows is computed from its evidence (`shown`): the oldest evidence's words (an
entity's summary, a relation's `evidence`) and its time (a relation's `createdAt`). Deleting or
forgetting an item removes its evidence from every row (`GraphSources.detach`); a row left
without evidence is removed, the others show what remains (`engine.upkeep.derived`).

Rows written before this bookkeeping carry none and are left as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from engine.records import MemoryRow, RelationRecord, Vector
from engine.scoping import TenantFilter

DERIVED_FROM = "derivedFrom"
SOURCES = "sources"
MAX_EVIDENCE = 32
"""The most items a graph row records (the first recorded kept): a name said in every turn
would otherwise grow its row without bound (MongoDB refuses a document over 16 MB). A row
shows words of recorded items only, so forgetting an unrecorded item leaves nothing of it
shown; a row whose recorded items are all forgotten goes, and comes back when it is named
again."""
GraphKind = Literal["entity", "relation"]


@dataclass(frozen=True, slots=True)
class Evidence:
    """What one memory item (`item`) said for a graph row, and when (ms)."""

    item: str
    text: str
    at: int

    def stored(self) -> dict[str, Any]:
        return {"item": self.item, "text": self.text, "at": self.at}


def evidence_of(metadata: Mapping[str, Any]) -> list[Evidence]:
    """The evidence a row's metadata holds, oldest first (none for a row without any)."""
    raw = metadata.get(SOURCES)
    if not isinstance(raw, list):
        return []
    found = [
        Evidence(str(e["item"]), str(e.get("text") or ""), int(e.get("at") or 0))
        for e in raw
        if isinstance(e, Mapping) and "item" in e
    ]
    return sorted(found, key=lambda e: (e.at, e.item))


def shown(evidence: Sequence[Evidence]) -> Evidence | None:
    """The evidence a row shows: the oldest (None: the row has none left)."""
    return min(evidence, key=lambda e: (e.at, e.item), default=None)


@dataclass(frozen=True, slots=True)
class Attachment:
    """`evidence` read for the graph row `row_id` of `kind`."""

    kind: GraphKind
    row_id: str
    evidence: Evidence


@dataclass(frozen=True, slots=True)
class DerivedRows:
    """Graph rows derived from some items (after their evidence was detached, for `detach`)."""

    entities: list[MemoryRow]
    relations: list[RelationRecord]


class GraphSources(Protocol):
    """The evidence of the graph rows: on MongoDB the `memory` (entity rows) and
    `relations` collections; in memory their stores' rows."""

    async def attach(self, attachments: Sequence[Attachment]) -> None:
        """Record each evidence on its row (a row that does not exist, or was written before
        the bookkeeping, is skipped); a row keeps one evidence per item, the first recorded
        (a redelivery changes nothing), and at most `MAX_EVIDENCE` items."""
        ...

    async def detach(self, where: TenantFilter, item_ids: Sequence[str]) -> DerivedRows:
        """Remove the evidence of these items from every graph row of the filter's exact
        tenant that holds some; the rows after (each with the evidence that remains)."""
        ...

    async def drop_bare(
        self, where: TenantFilter, entity_ids: Sequence[str], relation_ids: Sequence[str]
    ) -> tuple[list[str], list[str]]:
        """Remove those of these rows that hold no evidence (any more); the ids removed
        (entities, relations). A row that gained evidence meanwhile stays."""
        ...

    async def show_entity(
        self, where: TenantFilter, entity_id: str, content: str, embedding: Vector, model: str
    ) -> None:
        """Set what an entity row says (its text and that text's vector)."""
        ...

    async def show_relation(
        self, where: TenantFilter, relation_id: str, evidence: str, created_at: int
    ) -> None:
        """Set what a relation shows: its sentence (`metadata.evidence`) and since when."""
        ...
