"""The one set of search tuning defaults: the engine's policies (`RelevancePolicy`,
`SearchPolicy`, the ranking functions) and the settings (`services.settings`) both take them
from here. No imports beyond `engine.decay`, so a process reading its settings loads no search
code. The request defaults (`limit`, `maxItems`, `maxItemChars`) are wire contracts:
`schemas.search_defaults`."""

from __future__ import annotations

from engine.decay import DEFAULT_HALF_LIFE_DAYS

DEFAULT_SEMANTIC_WEIGHT = 0.7
"""w in relevance = w·cos⁺ + (1 − w)·lexical."""
DEFAULT_MIN_COSINE = 0.3
DEFAULT_MIN_LEXICAL = 0.34
DEFAULT_MMR_LAMBDA = 0.7
DEFAULT_MIN_CANDIDATES = 3
"""Hits from which the reranker is called."""
DEFAULT_DOMINANCE_DELTA = 0.1
"""Skip the reranker when top1 − top2 ≥ this (0.05 before issue 32: pool relevance maps
cosine 0.15-0.65 onto [0, 1], twice the units of w·cosine)."""
DEFAULT_QUERY_CACHE_TTL_SECONDS = 120

__all__ = [
    "DEFAULT_DOMINANCE_DELTA",
    "DEFAULT_HALF_LIFE_DAYS",
    "DEFAULT_MIN_CANDIDATES",
    "DEFAULT_MIN_COSINE",
    "DEFAULT_MIN_LEXICAL",
    "DEFAULT_MMR_LAMBDA",
    "DEFAULT_QUERY_CACHE_TTL_SECONDS",
    "DEFAULT_SEMANTIC_WEIGHT",
]
