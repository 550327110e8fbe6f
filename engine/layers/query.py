"""The query every layer search receives."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.lexical import terms
from engine.ports import Vector
from engine.records import TurnVector
from engine.relevance import RelevancePolicy
from schemas.scope import Scope


@dataclass(frozen=True)
class LayerQuery:
    """`vector` is the query embedded once per request by `model` (unit length)."""

    scope: Scope
    query: str
    limit: int
    vector: Vector | None
    model: str
    now_ms: int
    relevance: RelevancePolicy = field(default_factory=RelevancePolicy)

    @property
    def terms(self) -> list[str]:
        return terms(self.query)

    def cosine(self, embedding: Vector | None, model: str | None) -> float | None:
        """Cosine with a stored vector; None if it is missing or from another vector space."""
        if self.vector is None or embedding is None or model != self.model:
            return None
        if embedding.shape != self.vector.shape:
            return None
        return float(np.dot(embedding, self.vector))

    def best_turn(self, vectors: list[TurnVector]) -> float | None:
        """The highest cosine among turn vectors of this query's model."""
        scores = [c for v in vectors if (c := self.cosine(v.embedding, v.model)) is not None]
        return max(scores) if scores else None
