"""How a layer turns semantic and lexical evidence into one relevance in [0, 1].

relevance = w·cos⁺ + (1 − w)·lexical, with w = 0.7 by default (cos⁺ = cosine clipped at 0).
A candidate is a hit when its cosine reaches `min_cosine` or its lexical score reaches
`min_lexical`: paraphrases are found by meaning, names and rare words by their letters.
Without a vector (another embedding model, or none stored) only the lexical test applies.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.retrieval.defaults import (
    DEFAULT_MIN_COSINE,
    DEFAULT_MIN_LEXICAL,
    DEFAULT_SEMANTIC_WEIGHT,
)


@dataclass(frozen=True, slots=True)
class RelevancePolicy:
    semantic_weight: float = DEFAULT_SEMANTIC_WEIGHT
    min_cosine: float = DEFAULT_MIN_COSINE
    min_lexical: float = DEFAULT_MIN_LEXICAL


def combined(cosine: float, lexical: float, policy: RelevancePolicy) -> float:
    """w·cos⁺ + (1 − w)·lexical in [0, 1], whether or not the candidate is a hit."""
    w = policy.semantic_weight
    return w * max(0.0, min(1.0, cosine)) + (1 - w) * lexical


def relevance(cosine: float | None, lexical: float, policy: RelevancePolicy) -> float | None:
    """The combined relevance, or None when the candidate is not a hit."""
    if cosine is None:
        return lexical if lexical >= policy.min_lexical else None
    if cosine < policy.min_cosine and lexical < policy.min_lexical:
        return None
    return combined(cosine, lexical, policy)
