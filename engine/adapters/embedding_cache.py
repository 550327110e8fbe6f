"""An embedder wrapped by a cache keyed by model + dimension + input type + text hash
(fixes reference §16.25: the reference's key was the text alone, so a model change served
vectors from the old space). Cache failures are soft: the inner embedder answers."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np

from engine.ports import Embedder, InputType, QueryCache, Vector
from schemas.ids import h32

EMBEDDING_TTL_SECONDS = 86_400


def embedding_key(model: str, dimension: int, input_type: InputType, text: str) -> str:
    return f"embedding:{model}:{dimension}:{input_type}:{h32(text)}"


class CachedEmbedder:
    def __init__(
        self, inner: Embedder, cache: QueryCache, *, ttl_seconds: int = EMBEDDING_TTL_SECONDS
    ) -> None:
        self._inner = inner
        self._cache = cache
        self._ttl = ttl_seconds

    @property
    def model(self) -> str:
        return self._inner.model

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        keys = [embedding_key(self.model, self.dimension, input_type, t) for t in texts]
        # return_exceptions: a cache that fails is a miss, never a failed embedding
        blobs = await asyncio.gather(*(self._cache.get(k) for k in keys), return_exceptions=True)
        out: list[Vector | None] = [
            np.frombuffer(b, dtype="<f4").astype(np.float32)
            if isinstance(b, bytes) and len(b) == 4 * self.dimension
            else None
            for b in blobs
        ]
        missing = [i for i, v in enumerate(out) if v is None]
        if missing:
            fresh = await self._inner.embed([texts[i] for i in missing], input_type)
            for i, vector in zip(missing, fresh, strict=True):
                out[i] = vector
            await asyncio.gather(
                *(
                    self._cache.set(keys[i], vector.astype("<f4").tobytes(), self._ttl)
                    for i, vector in zip(missing, fresh, strict=True)
                ),
                return_exceptions=True,
            )
        return [v for v in out if v is not None]
