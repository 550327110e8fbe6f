"""Document vectors addressed by their content: an embedder that looks each text up in a
durable `VectorStore` first and runs the model only on texts it has never seen, storing
what it computes. Replaying or rebuilding stored turns therefore runs no model at all, and
the store outlives the 24 h Redis cache. Queries pass through (they are rarely repeated
word for word and would only fill the store)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.ports import Embedder, InputType, Vector, VectorStore
from schemas.ids import h32


def vector_key(model: str, dimension: int, text: str) -> str:
    """The content address of `text` embedded as a document by `model` at `dimension`."""
    return f"{model}:{dimension}:{h32(text)}"


def group_key(model: str, dimension: int, texts: Sequence[str]) -> str:
    """The content address of `texts` embedded together as documents and stored as one
    record, their vectors end to end (a turn and its messages: `StoredEmbedder.embed_groups`).
    One text is addressed as `vector_key` addresses it."""
    if len(texts) == 1:
        return vector_key(model, dimension, texts[0])
    return f"{model}:{dimension}:{len(texts)}:{h32(chr(0x1F).join(texts))}"


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

    async def embed_groups(self, groups: Sequence[Sequence[str]]) -> list[list[Vector]]:
        """Each group's texts embedded as documents; a group is stored and read as one record
        (`group_key`). A replay's turn and its messages are one key, where they were three:
        the MongoDB-wire server's `find` of stored vectors was 30 % of its time in a replay
        (stop 44), and the live stage writes one record a turn instead of three.

        A group not stored yet is made from the texts' own records where a store written
        before groups has them, and the model for the rest, in one call of every text
        once; only the group's record is written."""
        keys = [group_key(self.model, self.dimension, g) for g in groups]
        found = await self._store.get_many(list(dict.fromkeys(keys)))
        done: dict[str, list[Vector]] = {}
        for g, k in zip(groups, keys, strict=True):
            record = found.get(k)
            if record is not None and record.size == len(g) * self.dimension:
                done[k] = list(record.reshape(len(g), self.dimension))
        missing = {k: g for g, k in zip(groups, keys, strict=True) if k not in done}
        if missing:
            texts = list(dict.fromkeys(t for g in missing.values() for t in g))
            by_text = await self._texts(
                texts, single={g[0] for g in missing.values() if len(g) == 1}
            )
            made = {k: [by_text[t] for t in g] for k, g in missing.items()}
            await self._store.put_many(
                {k: vs[0] if len(vs) == 1 else np.concatenate(vs) for k, vs in made.items()}
            )
            done.update(made)
        return [done[k] for k in keys]

    async def _texts(self, texts: list[str], single: set[str]) -> dict[str, Vector]:
        """Each text's vector: a stored record of its own (texts of a group may have one,
        from a store written before groups; `single` texts were just looked up), else the
        model's, in one call."""
        asked = [t for t in texts if t not in single]
        keys = self.keys(asked)
        stored = await self._store.get_many(keys) if asked else {}
        out = {t: stored[k] for t, k in zip(asked, keys, strict=True) if k in stored}
        fresh = [t for t in texts if t not in out]
        if fresh:
            out.update(zip(fresh, await self._inner.embed(fresh, "document"), strict=True))
            self.computed += len(fresh)
        return out

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        if input_type != "document":
            return await self._queries.embed(texts, input_type)
        if not texts:
            return []
        # each text a group of its own: its record is `vector_key`'s, as it always was
        return [vectors[0] for vectors in await self.embed_groups([[t] for t in texts])]
