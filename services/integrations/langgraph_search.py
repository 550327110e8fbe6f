"""Reading and ranking a `MnemoStore`'s items as LangGraph's own stores do (issue 30).

**Why not the vectors layer.** A layer search answers its top hits above a relevance floor,
for pre_turn's prompt; a LangGraph search must rank *every* item of the namespace prefix that
matches the filter and page through them with `offset`/`limit`. So a search reads the whole
candidate set with the items group's `scan` (server-side: the store's exact tenant, the
namespace prefix's tag, active rows only, read straight from the database so a write is seen
by the next read), a page at a time; the filter, the TTL and the namespace are checked here,
and only then are the items ranked and sliced.

**Scores.** Each item keeps one text per indexed field (`Record.texts`); its score is the best
cosine between the query and those texts (a field that matches well finds the item, as in
LangGraph's stores). The deployment's embedder scores them in the items group (the scan
carries the query), unless the store was given an `embed` of its own (`index={"embed": ...}`):
then the texts are embedded here with it, each distinct text once per store (`EmbedCache`). An
item without texts (`index=False`, or nothing at its fields) has no score (None) and comes
after the scored ones, as in `InMemoryStore`.

**Order.** With a query: score, higher first (ties: newest update first). Without one: newest
update first, as LangGraph's Postgres store lists.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import ListNamespacesOp, SearchItem, SearchOp

from schemas.requests import ItemReply
from schemas.scope import Scope
from services.integrations.store_records import (
    PREFIXES_KEY,
    SCAN_PAGE,
    TEXTS_KEY,
    Record,
    matches,
    moment,
    namespace_matches,
    prefix_tag,
    value_of,
)
from services.sdk.client import MemoryClient
from services.sdk.transport import RequestFailed

Scored = tuple[Record, float | None]
"""An item and its score against the query (None: unscored)."""

EMBED_CACHE_TEXTS = 10_000
"""Distinct texts an `EmbedCache` keeps vectors of (least recently used dropped first)."""


class EmbedCache:
    """A caller's LangChain `Embeddings`, each distinct text embedded once (bounded LRU)."""

    def __init__(self, embeddings: Embeddings) -> None:
        self.embeddings = embeddings
        self._vectors: OrderedDict[str, list[float]] = OrderedDict()

    async def documents(self, texts: Sequence[str]) -> list[list[float]]:
        missing = sorted({t for t in texts if t not in self._vectors})
        if missing:
            vectors = await self.embeddings.aembed_documents(missing)
            self._vectors.update(zip(missing, vectors, strict=True))
        for t in texts:
            self._vectors.move_to_end(t)
        while len(self._vectors) > EMBED_CACHE_TEXTS:
            self._vectors.popitem(last=False)
        return [self._vectors[t] for t in texts]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity in [-1, 1] (0 when either vector is zero)."""
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norm if norm else 0.0


@dataclass(frozen=True)
class Reader:
    """Reads one tenant's items: `own` turns a row into its item (None: not an item of this
    tenant, see `MnemoStore._own`); `now` is the clock in ms (what TTLs are checked at)."""

    client: MemoryClient
    scope: Scope
    own: Callable[[Mapping[str, Any]], Record | None]
    now: Callable[[], int]
    timeout: float | None = None
    embed: EmbedCache | None = None

    async def scan(
        self,
        prefix: Sequence[str],
        query: str | None = None,
        first: ItemReply | None = None,
        expired: bool = False,
    ) -> list[Scored]:
        """Every live item of namespace `prefix` (and below), each with its score against
        `query` as the items group computes it (None without a query), by row id. `first`:
        the first page's reply, when it was asked already (without a query); `expired`:
        the items whose TTL ran out too."""
        found: list[Scored] = []
        after: str | None = None
        at = self.now()
        while True:
            reply = first or await self.client.scan_items(
                self.scope,
                tagged={PREFIXES_KEY: prefix_tag(prefix)},
                after=after,
                limit=SCAN_PAGE,
                query=query,
                texts_at=TEXTS_KEY if query else None,
                timeout=self.timeout,
            )
            if reply.error:
                raise RequestFailed(reply.error)
            scores = reply.scores or {}
            for row in reply.items:
                record = self.own(row)
                n = len(prefix)
                if record is None or tuple(record.namespace[:n]) != tuple(prefix):
                    continue  # a prefix tag is a hash: the labels themselves decide
                if expired or not record.expired(at):
                    found.append((record, scores.get(str(row.get("id")))))
            if reply.next_after is None:
                return found
            after, first = reply.next_after, None

    async def expired(self) -> list[Record]:
        """The tenant's items whose TTL has run out (what a sweep deletes)."""
        found: list[Record] = []
        after: str | None = None
        at = self.now()
        while True:
            reply = await self.client.scan_items(
                self.scope,
                tagged={PREFIXES_KEY: prefix_tag(())},
                after=after,
                limit=SCAN_PAGE,
                timeout=self.timeout,
            )
            if reply.error:
                raise RequestFailed(reply.error)
            records = (self.own(row) for row in reply.items)
            found += [r for r in records if r is not None and r.expired(at)]
            if reply.next_after is None:
                return found
            after = reply.next_after

    async def search(self, op: SearchOp) -> list[Scored]:
        """The page of items `op` answers, as LangGraph's stores answer it (see the module
        docstring); each score None without a query."""
        remote = op.query if op.query and self.embed is None else None
        candidates = [
            (r, score)
            for r, score in await self.scan(op.namespace_prefix, remote)
            if matches(value_of(r), op.filter)
        ]
        if op.query and self.embed is not None:
            candidates = await self._scored_here(op.query, [r for r, _ in candidates])
        return rank(candidates, bool(op.query), op.offset, op.limit)

    async def _scored_here(self, query: str, records: Sequence[Record]) -> list[Scored]:
        assert self.embed is not None  # noqa: S101 - the caller checked
        query_vector = await self.embed.embeddings.aembed_query(query)
        texts = [t for r in records if r.indexed for t in r.texts]
        vectors = dict(zip(texts, await self.embed.documents(texts), strict=True))
        scored: list[Scored] = []
        for r in records:
            own = [cosine(query_vector, vectors[t]) for t in r.texts] if r.indexed else []
            scored.append((r, max(own) if own else None))
        return scored

    def search_in(self, snapshot: Sequence[Scored], op: SearchOp) -> list[Scored]:
        """The page a search without a query answers, out of `snapshot` (a `scan` of a
        prefix of its namespace prefix)."""
        n = len(op.namespace_prefix)
        candidates = [
            (r, None)
            for r, _ in snapshot
            if tuple(r.namespace[:n]) == tuple(op.namespace_prefix)
            and matches(value_of(r), op.filter)
        ]
        return rank(candidates, False, op.offset, op.limit)

    async def namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        """The namespaces of the tenant's live items that `op` selects, sorted."""
        return self.namespaces_in(await self.scan(()), op)

    @staticmethod
    def namespaces_in(snapshot: Sequence[Scored], op: ListNamespacesOp) -> list[tuple[str, ...]]:
        """`namespaces` out of `snapshot` (a `scan` of every item of the tenant)."""
        spaces = {tuple(r.namespace) for r, _ in snapshot}
        chosen = [
            ns
            for ns in spaces
            if all(namespace_matches(c.match_type, c.path, ns) for c in op.match_conditions or ())
        ]
        if op.max_depth is not None:
            chosen = list({ns[: op.max_depth] for ns in chosen})
        return sorted(chosen)[op.offset : op.offset + op.limit]


def rank(candidates: Sequence[Scored], by_score: bool, offset: int, limit: int) -> list[Scored]:
    """The page `offset`..`offset + limit` of `candidates` (already filtered): by score,
    higher first, the unscored last, when `by_score`; else newest update first. Ties: newest
    update first, then namespace and key (a stable order across pages)."""

    def newest(s: Scored) -> tuple[int, list[str], str]:
        return (-s[0].updatedAt, s[0].namespace, s[0].key)

    ordered = sorted(candidates, key=newest)
    if by_score:
        scored = [s for s in ordered if s[1] is not None]
        scored.sort(key=lambda s: -(s[1] or 0.0))
        ordered = scored + [s for s in ordered if s[1] is None]
    return [(r, score if by_score else None) for r, score in ordered][offset : offset + limit]


def search_item(record: Record, score: float | None) -> SearchItem:
    return SearchItem(
        namespace=tuple(record.namespace),
        key=record.key,
        value=value_of(record),
        created_at=moment(record.createdAt),
        updated_at=moment(record.updatedAt),
        score=score,
    )
