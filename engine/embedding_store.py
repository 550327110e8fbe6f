"""Document vectors addressed by their content: an embedder that looks each text up in a
durable `VectorStore` first and runs the model only on texts it has never seen, storing
what it computes. Replaying or rebuilding stored turns therefore runs no model at all, and
the store outlives the 24 h Redis cache. Queries pass through (they are rarely repeated
word for word and would only fill the store)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.ports import Embedder, InputType, Vector, VectorStore
from schemas.ids import h32


def vector_key(model: str, dimension: int, text: str) -> str:
    """The content address of `text` embedded as a document by `model` at `dimension`."""
    return f"{model}:{dimension}:{h32(text)}"


class StoredEmbedder:
    """An `Embedder` whose document vectors are read from and written to `store`; queries go
    to `queries` (e.g. the model behind a Redis cache), else to the model."""

    def __init__(
        self, inner: Embedder, store: VectorStore, queries: Embedder | None = None
    ) -> None:
        self._inner = inner
        self._store = store
        self._queries = queries or inner
        self.computed = 0
        """Texts this process embedded with the model (observability, benchmarks)."""

    @property
    def model(self) -> str:
        return self._inner.model

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def keys(self, texts: Sequence[str]) -> list[str]:
        return [vector_key(self.model, self.dimension, t) for t in texts]

    async def known(self, texts: Sequence[str]) -> list[Vector | None]:
        """The stored document vector of each text, None where there is none yet."""
        keys = self.keys(texts)
        found = await self._store.get_many(list(dict.fromkeys(keys)))
        return [found.get(k) for k in keys]

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        if input_type != "document":
            return await self._queries.embed(texts, input_type)
        if not texts:
            return []
        keys = self.keys(texts)
        found = await self._store.get_many(list(dict.fromkeys(keys)))
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in found))
        if missing:
            fresh = await self._inner.embed(missing, "document")
            self.computed += len(missing)
            made = dict(zip(self.keys(missing), fresh, strict=True))
            await self._store.put_many(made)
            found.update(made)
        return [found[k] for k in keys]
