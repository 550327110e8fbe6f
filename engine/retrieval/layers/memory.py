"""The layers over the `memory` collection: graph (facts) and vectors (every source).

A user's read also finds the agent's user-less knowledge rows (`engine.scoping`: agent
knowledge is shared by every user of the agent; the agent's other memory is not).

Candidates come from the vector index (exact cosine over the tenant's rows, or Atlas with a
pre-filter); BM25 over the candidates adds lexical evidence. When ranked, the candidates go
through temporal decay → rerank (fail-soft) → MMR (λ = 0.7), whose order survives the final
sort (fixes reference §16.7). The double-ranking rule: when a request asks for both graph and
vectors, vectors keeps its raw relevance order (no decay, rerank or MMR).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

from engine.decay import DEFAULT_HALF_LIFE_DAYS, recency_anchor
from engine.errors import DependencyFailed
from engine.ports import RelationStore, Reranker, VectorIndex
from engine.records import MemoryRow, outdated_since
from engine.retrieval.hits import Hit
from engine.retrieval.layers.graph import Links, hydrate, user_links
from engine.retrieval.layers.query import LayerQuery
from engine.retrieval.ranking import mmr
from engine.retrieval.reads import error_seen
from engine.retrieval.relevance import pool_relevance, top_cosines
from engine.retrieval.rerank.fail_soft import rerank_fail_soft
from engine.retrieval.temporal import utc_day
from engine.retrieval.units import Shown, Unit, pool_units
from engine.scoping import SHARED_SOURCES, TenantFilter

log = logging.getLogger(__name__)

CANDIDATES_PER_RESULT = 3
"""Candidates fetched per returned hit, so MMR and the reranker have room to work."""
CANDIDATE_POOL = 60
"""Candidates fetched at least, whatever the `limit`: BM25 is normalised over the pool, so a
pool that grew with `limit` changed the ranking, not only the length (issue 16)."""


@dataclass(frozen=True, slots=True)
class MemoryLayerOptions:
    layer: str
    sources: Sequence[str] | None
    ranked: bool
    reranker: Reranker | None = None
    half_life_days: float = DEFAULT_HALF_LIFE_DAYS
    mmr_lambda: float = 0.7
    rerank_min_candidates: int = 3
    rerank_dominance_delta: float = 0.05
    version: str | None = None
    relations: RelationStore | None = None
    """When set, matched entities are hydrated with their first-degree relations."""


OUTDATED_FACTOR = 0.5
"""A turn whose stated fact was replaced ranks at half its relevance, marked "(until …)"."""


def _outdated(row: MemoryRow, as_of: int | None) -> str | None:
    """ " (until YYYY-MM-DD)" when a fact this turn row stated was replaced by `as_of` (or
    by now), else None (issue 17 §2: never shown as current beside its replacement)."""
    since = outdated_since(row.metadata) if row.source == "session" else None
    if since is None or (as_of is not None and since > as_of):
        return None
    day = utc_day(since)
    return f" (until {day})" if day else " (outdated)"


def _hit(
    layer: str,
    row: MemoryRow,
    score: float,
    shown: Shown,
    as_of: int | None = None,
    unit: int | None = None,
) -> Hit:
    """The candidate as a hit shown as `shown` (its best message or the whole row), without
    its `raw` item (`_with_raw` adds it to the few hits returned: building it for every
    candidate was a tenth of a request's work)."""
    confidence = row.metadata.get("confidence")
    importance = row.metadata.get("importance")
    text, context = shown.text, shown.context
    if "outdatedSince" in row.metadata and (mark := _outdated(row, as_of)) is not None:
        text, context = text + mark, context + mark if context else None
        score *= OUTDATED_FACTOR
    return Hit(
        layer=layer,
        id=row.vector_id,
        text=text,
        context=context,
        score=score,
        created_at=row.created_at,
        confidence=float(confidence) if isinstance(confidence, int | float) else None,
        importance=float(importance) if isinstance(importance, int | float) else None,
        access_count=row.access_count,
        source=row.source,
        unit=unit,
        turn=_turn(row),
    )


def _turn(row: MemoryRow) -> str | None:
    """A turn row's "<session id>#<turn id>" (as the scene layer names the turn)."""
    session, turn = row.metadata.get("sessionId"), row.metadata.get("turnId")
    if row.source != "session" or not isinstance(session, str) or not isinstance(turn, str):
        return None
    return f"{session}#{turn}"


def _with_raw(hit: Hit, row: MemoryRow, cosine: float | None) -> Hit:
    """`hit` with its layer-search item; `score` is the one the hit is ranked by."""
    score = hit.score
    return replace(
        hit,
        raw={
            "id": row.vector_id,
            "vectorId": row.vector_id,
            "content": row.content,
            "score": score,
            "cosine": cosine,
            "source": row.source,
            "agentWallet": row.scope.agent_wallet,
            "userAddress": row.scope.user_address,
            "threadId": row.scope.thread_id,
            "mode": row.scope.mode,
            "haiId": row.scope.hai_id,
            "decayScore": row.decay_score,
            "invalidAt": row.invalid_at,
            "supersededBy": row.superseded_by,
            "accessCount": row.access_count,
            "createdAt": row.created_at,
            "metadata": {
                k: v
                for k, v in row.metadata.items()
                if k in ("type", "factType", "confidence", "importance", "retention", "status")
            },
        },
    )


async def search_memory(
    index: VectorIndex, q: LayerQuery, options: MemoryLayerOptions
) -> list[Hit]:
    """Hits of the tenant's memory rows (all threads), best first, at most `q.limit`."""
    # Both memory layers read through one filter that admits agent knowledge (issue 17 §4);
    # a layer's `sources` then narrow what it shows. One filter is one cached matrix per
    # tenant and one scan per request for the graph and vectors layers together: with the
    # graph's narrower filter, the tenant's rows were held and scanned twice.
    where = q.where(options.layer, durable=True, shared_sources=SHARED_SOURCES)
    if where is None:
        return []
    # the tenant's rows catch up with the store (a delta after a write) while the query is
    # embedded, not after it: the reads overlap the model (issue 28); `search` below waits
    # for the same catch-up, and raises its error if it failed
    catching_up = (
        asyncio.ensure_future(
            index.prepare(
                where,
                model=q.model,
                dim=q.dimension,
                version=options.version,
                shared=q.tokens.shared,
            )
        )
        if q.dimension is not None
        else None
    )
    if catching_up is not None:
        catching_up.add_done_callback(error_seen)
    # the user's own links are read while the query is embedded, not after (hydration)
    relations = options.relations
    ahead = (
        asyncio.ensure_future(
            q.read(
                ("user-links", id(relations), where, q.scope.mode, q.scope.hai_id),
                lambda: user_links(relations, where, q.scope),
                token=q.tokens.relations,
            )
        )
        if relations is not None
        else None
    )
    try:
        return await _search(index, q, options, where, ahead)
    finally:
        if ahead is not None and not ahead.done():
            ahead.cancel()
        if catching_up is not None and not catching_up.done():
            catching_up.cancel()


async def _search(
    index: VectorIndex,
    q: LayerQuery,
    options: MemoryLayerOptions,
    where: TenantFilter,
    ahead: asyncio.Future[Links] | None,
) -> list[Hit]:
    q = await q.with_vector()
    if q.vector is None:
        raise DependencyFailed("no query vector")
    candidates = await index.search(
        where,
        q.vector,
        model=q.model,
        k=max(CANDIDATE_POOL, CANDIDATES_PER_RESULT * q.limit),
        sources=options.sources,
        version=options.version,
        shared=q.tokens.shared,
        filters=q.filters.applies_to(options.layer),
        as_of=q.as_of,
        terms=q.terms,
    )
    # each message of a turn with unit vectors is a candidate of its own; another row is
    # judged by its best message and shown as it (engine.retrieval.units)
    units = pool_units(q.terms, q.vector, q.model, candidates)
    hits: list[Hit] = []
    vectors = {}
    found: dict[str, tuple[MemoryRow, float | None]] = {}
    scores = pool_relevance(
        [u.cosine for u in units],
        [u.shown.lexical for u in units],
        q.relevance,
        keep=_kept(units, [c for _, c in candidates], q),
    )
    for unit, score in zip(units, scores, strict=True):
        if score is None:
            continue
        row, cosine = candidates[unit.row]
        hits.append(_hit(options.layer, row, score, unit.shown, q.as_of, unit.unit))
        found[row.vector_id] = (row, cosine)
        if not row.pending and unit.unit is None:  # MMR compares the others by their text
            vectors[row.vector_id] = row.embedding
    if not options.ranked:
        plain = _rows_limited(sorted(hits, key=lambda h: (-(h.score or 0.0), h.id)), q.limit)
        chosen = [_with_raw(h, *found[h.id]) for h in plain]
        return await _hydrated(options, where, chosen, q.as_of, ahead)
    now = q.now_ms if q.as_of is None else min(q.now_ms, q.as_of)
    ranked, outcome = await rerank_fail_soft(
        options.reranker,
        q.query,
        hits,
        now_ms=recency_anchor((h.created_at for h in hits), now),
        half_life_days=options.half_life_days,
        min_candidates=options.rerank_min_candidates,
        dominance_delta=options.rerank_dominance_delta,
        log=log,
    )
    log.debug("layer %s rerank: %s", options.layer, outcome)
    final = _rows_limited(mmr(ranked, options.mmr_lambda, vectors=vectors), q.limit)
    # the raw item reports the score the hit is ranked by (after decay, rerank and MMR)
    chosen = [_with_raw(h, *found[h.id]) for h in final]
    return await _hydrated(options, where, chosen, q.as_of, ahead)


def _kept(units: Sequence[Unit], row_cosines: Sequence[float | None], q: LayerQuery) -> set[int]:
    """The units no floor drops (`pool_relevance`'s `keep`): every unit of a row that is a
    hit as a whole (its turn's cosine and its best message's words: what finds a turn
    finds its messages too); with `q.fill`, also every unit of the `q.limit` rows plain
    cosine over whole rows ranks first (what MiniLM top-k over turns would show) and the
    `q.limit` units whose own cosine ranks first."""
    rows: set[int] = set()
    if any(u.unit is not None for u in units):  # else each row is its own one unit
        lexical = [0.0] * len(row_cosines)
        for u in units:
            lexical[u.row] = max(lexical[u.row], u.shown.lexical)
        as_rows = pool_relevance(row_cosines, lexical, q.relevance)
        rows = {i for i, score in enumerate(as_rows) if score is not None}
    own: list[int] = []
    if q.fill:
        rows.update(top_cosines(row_cosines, q.limit))
        own = top_cosines([u.cosine for u in units], q.limit)
    return {i for i, u in enumerate(units) if u.row in rows}.union(own)


def _rows_limited(hits: Sequence[Hit], limit: int) -> list[Hit]:
    """The hits, in order, of the first `limit` rows they show (a row may answer as several
    of its messages: `limit` counts memories, not messages)."""
    rows: set[str] = set()
    out: list[Hit] = []
    for hit in hits:
        if hit.id not in rows:
            if len(rows) >= limit:
                continue
            rows.add(hit.id)
        out.append(hit)
    return out


async def _hydrated(
    options: MemoryLayerOptions,
    where: TenantFilter,
    hits: list[Hit],
    as_of: int | None,
    ahead: asyncio.Future[Links] | None,
) -> list[Hit]:
    if options.relations is None:
        return hits
    known = await ahead if ahead is not None else None
    return await hydrate(options.relations, where, hits, as_of, known)
