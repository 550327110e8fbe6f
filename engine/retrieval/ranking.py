"""Ranking of layer hits: temporal decay, merging reranker scores, maximal marginal relevance.

Pure functions (stdlib and numpy, no I/O). The caller composes them in this order:
decay → rerank (`engine.retrieval.rerank.rerank_fail_soft`, which applies decay itself) → MMR
→ pack.

Scores are relevance in [0, 1], higher is more relevant; a hit whose `score` is None ranks as
0.0. Times are milliseconds since epoch. Every sort here is stable, so equal scores keep their
input order. Differences from the reference (reference §5, §16.7, §16.17):

- reranker scores are merged by hit id, not by text, and multiplied by the decay multiplier
  instead of replacing the decayed score (decay is not reduced to a 1e-6 tie-breaker);
- MMR rewrites scores so that a later sort by score keeps the MMR order (it is not dead code).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from engine.decay import DEFAULT_HALF_LIFE_DAYS, decay_multiplier
from engine.retrieval.defaults import (
    DEFAULT_DOMINANCE_DELTA,
    DEFAULT_MIN_CANDIDATES,
    DEFAULT_MMR_LAMBDA,
)
from engine.retrieval.hits import Hit

MMR_EXACT_LIMIT = 100
"""MMR is exact for up to this many hits; beyond it only the best-scored ones are diversified."""

# Score gaps such as 0.30 - 0.25 come out as 0.04999999999999999 in binary floating point; a
# gap that equals the threshold in decimal must count as reaching it.
_GAP_TOLERANCE = 1e-9
_WORD = re.compile(r"\w+")

FloatArray = npt.NDArray[np.float64]
Similarity = Callable[[Hit, Hit], float]
"""Similarity of two hits, higher is more similar (1.0 for identical texts)."""


def _score(hit: Hit) -> float:
    return hit.score if hit.score is not None else 0.0


def _sorted_by_score(hits: Sequence[Hit]) -> list[Hit]:
    return sorted(hits, key=_score, reverse=True)


def apply_decay(
    hits: Sequence[Hit], now_ms: int, half_life_days: float = DEFAULT_HALF_LIFE_DAYS
) -> list[Hit]:
    """Each hit's score multiplied by its `decay_multiplier`, sorted by score descending.

    A hit without a score keeps None (and ranks as 0.0).
    """
    decayed = [
        h
        if h.score is None
        else replace(h, score=h.score * decay_multiplier(h.created_at, now_ms, half_life_days))
        for h in hits
    ]
    return _sorted_by_score(decayed)


def should_rerank(
    hits: Sequence[Hit],
    *,
    min_candidates: int = DEFAULT_MIN_CANDIDATES,
    dominance_delta: float = DEFAULT_DOMINANCE_DELTA,
) -> str | None:
    """Why the reranker should be skipped for these (already decayed) hits, or None to call it.

    Skipped when there are fewer than `max(2, min_candidates)` hits, or when the best score
    leads the second best by at least `dominance_delta` (the top hit dominates; a reranker
    would rarely change the head of the list).
    """
    needed = max(2, min_candidates)
    if len(hits) < needed:
        return f"too few candidates ({len(hits)} < {needed})"
    top1, top2 = sorted((_score(h) for h in hits), reverse=True)[:2]
    gap = top1 - top2
    if gap >= dominance_delta - _GAP_TOLERANCE:
        return f"top hit dominates (gap {gap:.4f} >= {dominance_delta})"
    return None


def merge_rerank(
    hits: Sequence[Hit],
    scores: Mapping[str, float],
    now_ms: int,
    half_life_days: float = DEFAULT_HALF_LIFE_DAYS,
) -> list[Hit]:
    """Hits rescored with reranker relevance, sorted by score descending.

    `scores` maps hit id → provider relevance. A scored hit gets
    `clamp(relevance, 0, 1) × decay_multiplier(hit.created_at)`, so an old memory cannot
    outrank a fresh one of equal relevance. Scores are matched by id, so two hits with the
    same text keep their own scores. Hits without a (finite) provider score keep their
    current score, which the caller has already decayed.
    """
    merged: list[Hit] = []
    for hit in hits:
        relevance = scores.get(hit.id)
        if relevance is None or not math.isfinite(relevance):
            merged.append(hit)
            continue
        clamped = min(1.0, max(0.0, relevance))
        multiplier = decay_multiplier(hit.created_at, now_ms, half_life_days)
        merged.append(replace(hit, score=clamped * multiplier))
    return _sorted_by_score(merged)


def _words(text: str) -> frozenset[str]:
    # `\w+` rather than the reference's whitespace split, so "coffee." and "coffee" match.
    return frozenset(w for w in _WORD.findall(text.lower()) if len(w) > 2)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b|; 1.0 when both are empty, 0.0 when exactly one is."""
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def text_similarity(a: Hit, b: Hit) -> float:
    """The default MMR similarity: Jaccard over lower-cased words longer than 2 characters."""
    return jaccard(_words(a.text), _words(b.text))


class _Similarities:
    """Rows of MMR's n×n similarity matrix, each computed when first asked for: greedy MMR
    reads only the rows of the hits it picks, so a layer that keeps 5 of 100 candidates
    compares 5·100 pairs, not 100²/2. Cosine when both hits have a vector (the vectors are
    normalised once), else the given similarity, else `text_similarity`; 0 on the diagonal."""

    def __init__(
        self,
        hits: Sequence[Hit],
        similarity: Similarity | None,
        vectors: Mapping[str, npt.ArrayLike] | None,
    ) -> None:
        self._hits = hits
        self._similarity = similarity
        n = len(hits)
        self._position = np.full(n, -1, dtype=np.int64)  # row of `_unit`, or -1: no vector
        self._unit = np.zeros((0, 0), dtype=np.float64)
        if vectors is not None:
            held = [i for i, hit in enumerate(hits) if hit.id in vectors]
            if held:
                rows = [np.asarray(vectors[hits[i].id], dtype=np.float64).ravel() for i in held]
                if len({v.shape[0] for v in rows}) == 1:
                    unit = np.stack(rows)
                    norms = np.linalg.norm(unit, axis=1, keepdims=True)
                    self._unit = np.divide(unit, norms, out=unit, where=norms > 0)
                    self._position[held] = np.arange(len(held))
        self._with_vector = np.flatnonzero(self._position >= 0)
        self._vectorless = np.flatnonzero(self._position < 0)
        self._words: list[frozenset[str]] | None = None

    def _text(self, i: int, j: int) -> float:
        if self._similarity is not None:
            return self._similarity(self._hits[i], self._hits[j])
        if self._words is None:
            self._words = [_words(h.text) for h in self._hits]
        return jaccard(self._words[i], self._words[j])

    def row(self, i: int) -> FloatArray:
        n = len(self._hits)
        row = np.zeros(n, dtype=np.float64)
        own = int(self._position[i])
        if own >= 0:
            row[self._with_vector] = self._unit @ self._unit[own]
            others: Sequence[int] = self._vectorless.tolist()
        else:
            others = range(n)
        for j in others:
            if j != i:
                row[j] = self._text(i, j)
        row[i] = 0.0
        return row


def _greedy(
    relevance: FloatArray, sims: _Similarities, lam: float, steps: int
) -> tuple[list[int], list[float]]:
    """Classic greedy MMR: the first `steps` picks and each pick's MMR value at the time it
    was picked. Ties go to the lower index (the better-scored hit)."""
    n = len(relevance)
    taken = np.zeros(n, dtype=bool)
    penalty = np.zeros(n, dtype=np.float64)
    order: list[int] = []
    values: list[float] = []
    for step in range(min(n, steps)):
        value = lam * relevance - (1.0 - lam) * penalty
        value[taken] = -np.inf
        best = int(np.argmax(value))  # the first of equal values: the better-scored hit
        order.append(best)
        values.append(float(value[best]))
        taken[best] = True
        if len(order) < steps:
            sim = sims.row(best)
            penalty = sim if step == 0 else np.maximum(penalty, sim)
    return order, values


def mmr(
    hits: Sequence[Hit],
    lam: float = DEFAULT_MMR_LAMBDA,
    similarity: Similarity | None = None,
    *,
    vectors: Mapping[str, npt.ArrayLike] | None = None,
    keep: int | None = None,
) -> list[Hit]:
    """Maximal marginal relevance: the hits in pick order, with scores consistent with it
    (only the first `keep` when given: the rest are not rescored, a layer returns `limit`).

    Relevance is the score itself when every score lies in [0, 1] (our layers' relevances
    do), else the min–max normalised score (1.0 for all when scores are equal). Each step
    picks the hit maximising `lam·relevance − (1 − lam)·max similarity to the hits already
    picked`; ties go to the better-scored hit. `lam` is clamped to [0, 1]; `lam = 1` returns a
    plain sort by score with scores unchanged. Similarity is the cosine of `vectors[hit.id]`
    when both hits have a vector, else `similarity`, else `text_similarity`.

    Scores are rewritten to `lo + max(0, mmr_value) / lam · (hi − lo)` over the input range
    [lo, hi] (over [0, hi] when all scores are equal), then made non-increasing along the pick
    order, so a later stable sort by score keeps the MMR order. A near-duplicate of a picked
    hit therefore drops below a less relevant but novel hit.

    Exact for up to `MMR_EXACT_LIMIT` hits. Beyond that (an approximation that bounds the work
    at O(limit²) similarities), the best-scored `MMR_EXACT_LIMIT` hits are diversified and the
    rest follow in score order, each capped at the score of the hit before it.
    """
    if not math.isfinite(lam):
        raise ValueError(f"MMR lambda must be finite, got {lam}")
    lam = min(1.0, max(0.0, lam))
    ordered = _sorted_by_score(hits)
    if len(ordered) <= 1 or lam == 1.0:
        return ordered if keep is None else ordered[: max(keep, 0)]
    head, tail = ordered[:MMR_EXACT_LIMIT], ordered[MMR_EXACT_LIMIT:]

    raw = np.array([_score(h) for h in ordered], dtype=np.float64)
    lo, hi = float(raw.min()), float(raw.max())
    spread = hi - lo
    if lo >= 0.0 and hi <= 1.0:
        # Scores already on [0, 1] (every layer's relevance is) are used as they are: min–max
        # stretching would give the lowest candidate relevance 0 whatever its score, so a
        # novel but slightly less relevant hit could never overtake a near-duplicate.
        relevance, base, span = raw, 0.0, 1.0
    else:
        relevance = (raw - lo) / spread if spread > 0 else np.ones_like(raw)
        base, span = (lo, spread) if spread > 0 else (0.0, max(hi, 0.0))

    # with `keep`, only the first `keep` picks are returned: the greedy stops there
    steps = len(head) if keep is None else max(keep, 0)
    order, values = _greedy(
        relevance[: len(head)], _Similarities(head, similarity, vectors), lam, steps
    )
    # After the head, the tail keeps its own relevance (no diversity penalty).
    unit_scores = [max(0.0, v) / max(lam, 1e-9) for v in values]
    unit_scores += [float(r) for r in relevance[len(head) :]]
    picked = [head[i] for i in order] + tail

    result: list[Hit] = []
    previous = math.inf
    if keep is not None:
        picked, unit_scores = picked[: max(keep, 0)], unit_scores[: max(keep, 0)]
    for hit, unit_score in zip(picked, unit_scores, strict=True):
        score = min(base + unit_score * span, previous)
        previous = score
        result.append(replace(hit, score=score))
    return result
