"""Graph hydration: a matched entity or fact is shown with the links that answer around it.

An entity hit's text becomes, compactly:
`Juniper (pet): a greyhound — Juniper PET_OF the user; Juniper LIVES_IN Porto`
(its first-degree links, at most `MAX_RELATIONS`, oldest first; the user node reads "the
user"). When the entity is one step from the user, the step is shown too, so a chain that
starts at the user reads whole: `Berlin (place) — Acme Corp BASED_IN Berlin; the user
WORKS_AT Acme Corp`.

A fact hit that names an entity next to the user gains that entity's other links (issue 17
§1): "The user works at Acme Corp — Acme Corp BASED_IN Berlin" answers "Where is my
employer based?", which no single row does. Links already stated by the hit are not
repeated.

**Untyped links** (`MENTIONS`, `RELATED`: `engine.ingest.extraction.links`, issue 32) are
shown by their evidence, the sentence that links the two ends, quoted once however many
links it states, and never when the hit's text already holds it: `Initech (organisation):
These days I'm employed by Initech as an analyst. — "Initech's head office sits in Austin,
Texas."`. An entity hit also walks a second hop, to its neighbours' links (not through the
user node, which links to everything the user mentioned), after its own links and its step
back to the user: "my company" → Initech → "head office sits in Austin" reads whole without
a rule for either phrasing. At most `MAX_EVIDENCE` sentences per hit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from engine.ingest.extraction.types import UNTYPED
from engine.ingest.facts import USER_NODE, entity_id, normalise_name
from engine.ports import RelationStore
from engine.records import RelationRecord, ScopeFields
from engine.retrieval.hits import Hit
from engine.scoping import TenantFilter
from schemas.scope import Scope

MAX_RELATIONS = 6
"""Typed links shown per hit."""
MAX_EVIDENCE = 3
"""Evidence sentences (of untyped links) shown per hit."""
MAX_SHOWN = 12
"""Links considered (and listed in the hit's raw `relations`) per hit, nearest first."""


def _name(name: str) -> str:
    return "the user" if normalise_name(name) == USER_NODE else name


def _link(r: RelationRecord) -> str:
    return f"{_name(r.source_name)} {r.type} {_name(r.target_name)}"


def _evidence(r: RelationRecord) -> str:
    said = r.metadata.get("evidence")
    return said.strip() if isinstance(said, str) else ""


def render_links(relations: Sequence[RelationRecord], shown: str = "") -> str:
    """Typed links as "A TYPE B" (at most `MAX_RELATIONS`), then the evidence of untyped
    links as quoted sentences (at most `MAX_EVIDENCE`, each once, none already in `shown`)."""
    typed = [_link(r) for r in relations if r.type not in UNTYPED][:MAX_RELATIONS]
    said: list[str] = []
    for r in relations:
        sentence = _evidence(r)
        if r.type in UNTYPED and sentence and sentence not in said and sentence not in shown:
            said.append(sentence)
    quoted = [f"\u201c{s}\u201d" for s in said[:MAX_EVIDENCE]]
    return "; ".join([*typed, *quoted])


def _row_scope(hit: Hit) -> ScopeFields | None:
    raw = hit.raw
    agent = raw.get("agentWallet")
    if not isinstance(agent, str):
        return None
    return ScopeFields(agent, raw.get("userAddress"), None, raw.get("mode"), raw.get("haiId"))


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE) is not None


def _unique(relations: Iterable[RelationRecord]) -> list[RelationRecord]:
    return list({r.relation_id: r for r in relations}.values())


@dataclass(frozen=True, slots=True)
class Links:
    """The relations touching some nodes, read ahead (`user_links`): `ids` are the nodes
    whose every relation is in `relations`."""

    ids: frozenset[str]
    relations: list[RelationRecord]


async def user_links(store: RelationStore | None, where: TenantFilter, scope: Scope) -> Links:
    """The relations of the scope's user node, read while the query is embedded (rows of
    another mode or hai have their own user node: `hydrate` reads those when it meets them)."""
    if store is None or where.user_address is None:
        return Links(frozenset(), [])
    fields = ScopeFields(where.agent_wallet, where.user_address, None, scope.mode, scope.hai_id)
    user = entity_id(fields, USER_NODE)
    return Links(frozenset({user}), await store.around(where, [user]))


async def hydrate(
    store: RelationStore,
    where: TenantFilter,
    hits: list[Hit],
    as_of: int | None = None,
    known: Links | None = None,
) -> list[Hit]:
    """Entity and fact hits with the links around them (valid now, or at `as_of`); other
    hits unchanged. At most two reads of the relation store: the links of the hits' entities
    and of the user node (those of `known` nodes, read ahead, are not read again), then the
    links of the next nodes: the hit entities' neighbours and the user's neighbours that a
    fact hit names."""
    if not hits:
        return hits
    users = {
        entity_id(scope, USER_NODE)
        for h in hits
        if h.source in ("fact", "entity") and (scope := _row_scope(h)) is not None
    }
    entity_ids = [h.id for h in hits if h.source == "entity"]
    if not entity_ids and not users:
        return hits
    ahead = known or Links(frozenset(), [])
    wanted_first = [i for i in dict.fromkeys([*entity_ids, *users]) if i not in ahead.ids]
    read = await store.around(where, wanted_first) if wanted_first else []
    first = [r for r in _unique([*ahead.relations, *read]) if r.valid_at(as_of)]
    # the user's neighbours: an entity one link away from a user node
    near = {
        (r.target_id if r.source_id in users else r.source_id): (
            r.target_name if r.source_id in users else r.source_name
        )
        for r in first
        if (r.source_id in users) != (r.target_id in users)
    }
    facts = [h.text for h in hits if h.source == "fact"]
    named = [eid for eid, name in near.items() if any(_mentions(text, name) for text in facts)]
    hits_ids = set(entity_ids)
    hop = [
        other
        for r in first
        if hits_ids & {r.source_id, r.target_id}
        for other in (r.source_id, r.target_id)
        if other not in hits_ids and other not in users
    ]
    wanted = [eid for eid in dict.fromkeys([*named, *hop]) if eid not in entity_ids]
    second = [r for r in await store.around(where, wanted) if r.valid_at(as_of)] if wanted else []
    relations = _unique([*first, *second])
    out: list[Hit] = []
    for hit in hits:
        links = _links_of(hit, relations, users, near)
        rendered = render_links(links, hit.text) if links else ""
        if not rendered:
            out.append(hit)
            continue
        raw = {
            **hit.raw,
            "relations": [
                {"source": r.source_name, "type": r.type, "target": r.target_name}
                | ({"evidence": _evidence(r)} if _evidence(r) else {})
                for r in links
            ],
        }
        out.append(replace(hit, text=f"{hit.text} \u2014 {rendered}", raw=raw))
    return out


def _links_of(
    hit: Hit,
    relations: Sequence[RelationRecord],
    users: set[str],
    near: dict[str, str],
) -> list[RelationRecord]:
    """The links shown with `hit`, nearest first: an entity's own, its step back to the
    user, then its neighbours' (not the user's); a fact's named neighbours' links."""
    if hit.source == "entity":
        mine = [r for r in relations if hit.id in (r.source_id, r.target_id)]
        # one step back to the user, when this entity hangs off one of the user's neighbours
        ends = ({r.source_id for r in mine} | {r.target_id for r in mine}) - users
        back = [
            r
            for r in relations
            if r not in mine
            and (r.source_id in users or r.target_id in users)
            and ({r.source_id, r.target_id} & ends)
        ]
        onward = ends - {hit.id}
        further = [
            r
            for r in relations
            if r not in mine
            and r not in back
            and not ({r.source_id, r.target_id} & users)
            and ({r.source_id, r.target_id} & onward)
        ]
        return _unique([*mine, *back, *further])[:MAX_SHOWN]
    if hit.source != "fact":
        return []
    text = hit.text
    named = [eid for eid, name in near.items() if _mentions(text, name)]
    return [
        r
        for r in relations
        if (r.source_id in named or r.target_id in named)
        and r.source_id not in users
        and r.target_id not in users
        and not (_mentions(text, r.source_name) and _mentions(text, r.target_name))
    ][:MAX_SHOWN]
