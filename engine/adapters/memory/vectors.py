"""In-memory `VectorStore` (unit tests, the contract suite's twin)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from engine.records import Vector


class InMemoryVectorStore:
    def __init__(self) -> None:
        self._vectors: dict[str, Vector] = {}

    async def get_many(self, keys: Sequence[str]) -> dict[str, Vector]:
        return {k: self._vectors[k].copy() for k in keys if k in self._vectors}

    async def put_many(self, vectors: Mapping[str, Vector]) -> None:
        for key, v in vectors.items():
            self._vectors.setdefault(key, np.asarray(v, dtype=np.float32).copy())
