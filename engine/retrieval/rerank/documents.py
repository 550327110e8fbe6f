"""Rerank caller-supplied documents against a query (reference §13.4 `POST rerank`, §5.2).

Unlike the fail-soft step of pre_turn (`engine.retrieval.rerank.fail_soft`), this is the
operation itself, so it is not fail-soft: a configured reranker that fails raises
`DependencyFailed` (the reference answered an error too). Without a reranker the documents
are ranked by the relevance the memory layers use (`engine.retrieval.relevance.combined`: embedder
cosine and BM25 over the documents themselves), so the operation works offline.

Results are matched to documents by index, never by content: two documents with the same
text each keep their own entry (the reference merged by content, §16.17).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.ports import Embedder, Reranker, Vector
from engine.retrieval.lexical import all_terms, bm25, terms
from engine.retrieval.relevance import RelevancePolicy, combined

TIE_BREAK = 1e-6
"""Weight of the caller's own score in `score` (the reference's merge, reference §5.2)."""
LOCAL = "local"
"""The ranker name when no reranker is configured."""


@dataclass(frozen=True, slots=True)
class RankedDocument:
    """`index` into the request's documents; `relevance` in [0, 1] (higher is more
    relevant; 0 for a blank document); `score` = relevance + 1e-6 × the caller's score
    (0 when none was given), what results are sorted by."""

    index: int
    content: str
    score: float
    relevance: float


def local_relevance(
    query: str,
    query_vector: Vector | None,
    texts: Sequence[str],
    vectors: Sequence[Vector] | None,
    policy: RelevancePolicy,
) -> list[float]:
    """Relevance in [0, 1] of each text: w·cosine⁺ + (1 − w)·BM25, BM25 statistics taken
    from `texts` themselves; lexical only when there are no vectors."""
    lexical = bm25(terms(query), [all_terms(t) for t in texts])
    if query_vector is None or vectors is None:
        return lexical
    return [
        combined(float(np.dot(query_vector, v)), lex, policy)
        for v, lex in zip(vectors, lexical, strict=True)
    ]


def ordered(
    documents: Sequence[tuple[str, float | None]], relevance: Sequence[float], top_k: int | None
) -> list[RankedDocument]:
    """The documents scored and sorted by score descending (index ascending on ties), at
    most `top_k` of them."""
    ranked = [
        RankedDocument(
            index=i,
            content=text,
            relevance=rel,
            score=rel + TIE_BREAK * (given if given is not None and math.isfinite(given) else 0.0),
        )
        for i, ((text, given), rel) in enumerate(zip(documents, relevance, strict=True))
    ]
    ranked.sort(key=lambda r: (-r.score, r.index))
    return ranked[:top_k] if top_k is not None else ranked


async def rank_documents(
    query: str,
    documents: Sequence[tuple[str, float | None]],
    *,
    top_k: int | None,
    reranker: Reranker | None,
    embedder: Embedder,
    policy: RelevancePolicy,
) -> tuple[list[RankedDocument], str]:
    """`documents` are `(content, caller score or None)`. Returns the ranking (see
    `ordered`) and the ranker's name (`reranker.name`, or `LOCAL`).

    Raises `DependencyFailed` when the reranker (or, without one, the embedder) fails:
    nothing is ranked by a fallback the caller did not ask for."""
    texts = [text for text, _ in documents]
    if reranker is not None:
        scores = await reranker.rerank(query, [(str(i), t) for i, t in enumerate(texts)])
        relevance = [_unit(scores.get(str(i))) for i in range(len(texts))]
        return ordered(documents, relevance, top_k), reranker.name
    query_vector, *vectors = [
        *(await embedder.embed([query], "query")),
        *(await embedder.embed(texts, "document")),
    ]
    relevance = local_relevance(query, query_vector, texts, vectors, policy)
    blank = [not t.strip() for t in texts]
    relevance = [0.0 if b else r for r, b in zip(relevance, blank, strict=True)]
    return ordered(documents, relevance, top_k), LOCAL


def _unit(value: float | None) -> float:
    if value is None or not math.isfinite(value):
        return 0.0
    return min(1.0, max(0.0, value))
