"""Graph hydration: a matched entity is shown with its first-degree neighbourhood.

An entity hit's text becomes, compactly:
`Juniper (pet): a greyhound — Juniper PET_OF the user; Juniper LIVES_IN Porto`
(at most `MAX_RELATIONS` links, oldest first; the user node reads "the user").
"""

from __future__ import annotations

from dataclasses import replace

from engine.ingest.facts import USER_NODE, normalise_name
from engine.ports import RelationStore
from engine.records import RelationRecord
from engine.retrieval.hits import Hit
from engine.scoping import TenantFilter

MAX_RELATIONS = 6


def _name(name: str) -> str:
    return "the user" if normalise_name(name) == USER_NODE else name


def render_links(relations: list[RelationRecord]) -> str:
    return "; ".join(
        f"{_name(r.source_name)} {r.type} {_name(r.target_name)}" for r in relations[:MAX_RELATIONS]
    )


async def hydrate(
    store: RelationStore, where: TenantFilter, hits: list[Hit], as_of: int | None = None
) -> list[Hit]:
    """Entity hits with their relations (valid now, or at `as_of`) and neighbours appended;
    other hits unchanged."""
    entity_ids = [h.id for h in hits if h.source == "entity"]
    if not entity_ids:
        return hits
    relations = [r for r in await store.around(where, entity_ids) if r.valid_at(as_of)]
    out: list[Hit] = []
    for hit in hits:
        if hit.source != "entity":
            out.append(hit)
            continue
        mine = [r for r in relations if hit.id in (r.source_id, r.target_id)]
        if not mine:
            out.append(hit)
            continue
        links = render_links(mine)
        raw = {
            **hit.raw,
            "relations": [
                {"source": r.source_name, "type": r.type, "target": r.target_name}
                for r in mine[:MAX_RELATIONS]
            ],
        }
        out.append(replace(hit, text=f"{hit.text} — {links}", raw=raw))
    return out
