"""Layer searches: each turns a query into ranked `Hit`s of one memory layer.

working and scene are thread-scoped and matched lexically (`engine.lexical`); vectors is
durable (all threads of the tenant) and ranked by exact cosine similarity. Each layer returns
at most `limit` hits, best first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.hits import Hit
from engine.lexical import lexical_score, terms
from engine.ports import MemoryStore, TranscriptStore, Vector, WorkingStore
from engine.records import MemoryRow
from engine.scoping import tenant_filter
from schemas.scope import Scope

WORKING_LINES_SHOWN = 5
SCENE_MESSAGES_SHOWN = 3
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class LayerQuery:
    scope: Scope
    query: str
    limit: int

    @property
    def terms(self) -> list[str]:
        return terms(self.query)


async def search_working(store: WorkingStore, q: LayerQuery) -> list[Hit]:
    """Working buffers of the scope's thread whose lines share terms with the query.
    A hit's text is its newest lines, newest first (fixes REFERENCE §16.9)."""
    sessions = await store.recent(tenant_filter(q.scope, durable=False), 3 * q.limit)
    query_terms = q.terms
    hits: list[Hit] = []
    for s in sessions:
        score = lexical_score(query_terms, "\n".join(s.lines))
        if score <= 0 or not s.lines:
            continue
        shown = s.lines[:WORKING_LINES_SHOWN]
        hits.append(
            Hit(
                layer="working",
                id=s.session_id,
                text="\n".join(shown),
                score=score,
                created_at=s.last_accessed_at,
                source="working",
                raw={
                    "sessionId": s.session_id,
                    "mode": s.scope.mode,
                    "haiId": s.scope.hai_id,
                    "context": shown,
                    "state": s.state,
                    "lastAccessedAt": s.last_accessed_at,
                },
            )
        )
    return _best(hits, q.limit)


async def search_scene(store: TranscriptStore, q: LayerQuery) -> list[Hit]:
    """Transcripts of the scope's thread; a hit shows the messages that best match."""
    transcripts = await store.recent(tenant_filter(q.scope, durable=False), 3 * q.limit)
    query_terms = q.terms
    hits: list[Hit] = []
    for t in transcripts:
        scored = [
            (lexical_score(query_terms, m.content), i)
            for i, m in enumerate(t.messages)
            if m.role in ("user", "assistant")
        ]
        scored = [pair for pair in scored if pair[0] > 0]
        if not scored:
            continue
        best = sorted(scored, key=lambda p: (-p[0], -p[1]))[:SCENE_MESSAGES_SHOWN]
        shown = [t.messages[i] for _, i in sorted(best, key=lambda p: p[1])]
        hits.append(
            Hit(
                layer="scene",
                id=t.session_id,
                text="\n".join(f"{m.role}: {_SPACES.sub(' ', m.content).strip()}" for m in shown),
                score=max(s for s, _ in best),
                created_at=t.updated_at,
                source="transcript",
                raw={
                    "sessionId": t.session_id,
                    "threadId": t.scope.thread_id,
                    "mode": t.scope.mode,
                    "haiId": t.scope.hai_id,
                    "messageCount": len(t.messages),
                    "summary": t.summary,
                    "latestMessages": [
                        {"role": m.role, "content": m.content, "timestamp": m.timestamp}
                        for m in t.messages[-5:]
                    ],
                    "tokenCount": t.token_count,
                    "createdAt": t.created_at,
                },
            )
        )
    return _best(hits, q.limit)


def cosine_top_k(
    query: Vector, rows: Sequence[MemoryRow], k: int, min_score: float
) -> list[tuple[MemoryRow, float]]:
    """Exact cosine (rows and query are unit vectors), best first, scores ≥ `min_score`."""
    if not rows or k <= 0:
        return []
    matrix = np.stack([row.embedding for row in rows])
    scores = matrix @ query
    order = np.argsort(-scores, kind="stable")[:k]
    return [(rows[i], float(scores[i])) for i in order if scores[i] >= min_score]


async def search_vectors(
    store: MemoryStore,
    q: LayerQuery,
    query_vector: Vector,
    *,
    model: str,
    min_score: float,
) -> list[Hit]:
    """Durable rows of the tenant (all threads), by cosine similarity to the query.
    Rows embedded by another model or dimension are never compared (different spaces)."""
    rows = [
        row
        for row in await store.active_rows(tenant_filter(q.scope, durable=True))
        if row.embedding_model == model and row.embedding_dim == query_vector.shape[0]
    ]
    return [
        Hit(
            layer="vectors",
            id=row.vector_id,
            text=row.content,
            score=max(0.0, min(1.0, score)),
            created_at=row.created_at,
            confidence=_number(row.metadata.get("confidence")),
            importance=_number(row.metadata.get("importance")),
            access_count=row.access_count,
            source=row.source,
            raw={
                "id": row.vector_id,
                "vectorId": row.vector_id,
                "content": row.content,
                "score": score,
                "source": row.source,
                "agentWallet": row.scope.agent_wallet,
                "userAddress": row.scope.user_address,
                "threadId": row.scope.thread_id,
                "mode": row.scope.mode,
                "haiId": row.scope.hai_id,
                "decayScore": row.decay_score,
                "accessCount": row.access_count,
                "createdAt": row.created_at,
            },
        )
        for row, score in cosine_top_k(query_vector, rows, q.limit, min_score)
    ]


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _best(hits: list[Hit], limit: int) -> list[Hit]:
    return sorted(hits, key=lambda h: (-(h.score or 0.0), -(h.created_at or 0), h.id))[:limit]
