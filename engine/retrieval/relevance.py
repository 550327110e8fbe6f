"""How a layer turns semantic and lexical evidence into one relevance in [0, 1].

relevance = w·cos⁺ + (1 − w)·lexical, with w = 0.7 by default (cos⁺ = cosine clipped at 0).
A candidate is a hit on its own when its cosine reaches `min_cosine` or its lexical score
reaches `min_lexical`: paraphrases are found by meaning, names and rare words by their
letters. Without a vector (another embedding model, or none stored) only the lexical test
applies.

A layer judges its candidates as a pool (`pool_relevance`, issue 32): the fixed cut-offs
dropped paraphrases whose cosine sat at 0.2-0.3 (MiniLM rarely gives a paraphrase more), so
a question was answered by two hits and half its budget left empty. Once one candidate of
the pool is a hit on its own (the pool is *anchored*: the query is about something the
tenant holds), the candidates whose cosine reaches a share of the best one (`relative_cosine`)
are hits too, above a noise floor (`noise_cosine`). Their relevance is the same formula, so
they rank below the strong hits of every layer and only fill room the strong ones leave;
an unanchored pool (a question about nothing stored) still answers nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.retrieval.defaults import (
    DEFAULT_MIN_COSINE,
    DEFAULT_MIN_LEXICAL,
    DEFAULT_SEMANTIC_WEIGHT,
)

RELATIVE_COSINE = 0.5
"""In an anchored pool, a candidate whose cosine reaches this share of the pool's best is a
hit (measured on the `tune` split of `benchmarks.quality --dataset handwritten`)."""
NOISE_COSINE = 0.15
"""Below this cosine a candidate is never a hit by meaning: two unrelated sentences of one
conversation (shared names, shared small talk) score about this with MiniLM."""


@dataclass(frozen=True, slots=True)
class RelevancePolicy:
    semantic_weight: float = DEFAULT_SEMANTIC_WEIGHT
    min_cosine: float = DEFAULT_MIN_COSINE
    min_lexical: float = DEFAULT_MIN_LEXICAL
    relative_cosine: float = RELATIVE_COSINE
    """Share of an anchored pool's best cosine a candidate needs; 1.0 turns the relative
    floor off (only the fixed cut-offs decide, as before issue 32)."""
    noise_cosine: float = NOISE_COSINE


def combined(cosine: float, lexical: float, policy: RelevancePolicy) -> float:
    """w·cos⁺ + (1 − w)·lexical in [0, 1], whether or not the candidate is a hit."""
    w = policy.semantic_weight
    return w * max(0.0, min(1.0, cosine)) + (1 - w) * lexical


def relevance(cosine: float | None, lexical: float, policy: RelevancePolicy) -> float | None:
    """The combined relevance, or None when the candidate is not a hit on its own."""
    if cosine is None:
        return lexical if lexical >= policy.min_lexical else None
    if cosine < policy.min_cosine and lexical < policy.min_lexical:
        return None
    return combined(cosine, lexical, policy)


def pool_relevance(
    cosines: Sequence[float | None], lexicals: Sequence[float], policy: RelevancePolicy
) -> list[float | None]:
    """The relevance of each candidate of one layer's pool (None: not a hit), in order.

    A candidate that is a hit on its own (`relevance`) keeps that relevance. When at least
    one is, a candidate with a cosine ≥ max(`noise_cosine`, `relative_cosine` × the pool's
    best cosine) is a hit too, with the same combined relevance (lower than the strong
    hits', so it only fills what they leave). Without any hit on its own, nothing is."""
    strong = [relevance(c, x, policy) for c, x in zip(cosines, lexicals, strict=True)]
    if policy.relative_cosine >= 1.0 or all(s is None for s in strong):
        return strong
    best = max((c for c in cosines if c is not None), default=None)
    if best is None:
        return strong
    floor = max(policy.noise_cosine, policy.relative_cosine * best)
    return [
        s if s is not None or c is None or c < floor else combined(c, x, policy)
        for s, c, x in zip(strong, cosines, lexicals, strict=True)
    ]
