"""`StoredEmbedder` over the in-memory `VectorStore`: a document text is embedded once, ever;
stored vectors are read back instead of running the model (replays run no model)."""

from __future__ import annotations

import numpy as np

from engine.adapters.memory import HashingEmbedder, InMemoryVectorStore
from engine.embedding_store import StoredEmbedder, vector_key


async def test_a_document_text_is_embedded_once_and_then_read_from_the_store() -> None:
    inner, store = HashingEmbedder(32), InMemoryVectorStore()
    first = StoredEmbedder(inner, store)

    vectors = await first.embed(["alpha", "beta", "alpha"], "document")

    assert first.computed == 2
    assert np.array_equal(vectors[0], vectors[2])
    assert np.allclose(vectors[1], inner.vector("beta"))
    key = vector_key(inner.model, 32, "alpha")
    assert np.array_equal((await store.get_many([key]))[key], inner.vector("alpha"))

    replay = StoredEmbedder(inner, store)  # another process, the same durable store
    again = await replay.embed(["beta", "gamma", "alpha"], "document")
    assert replay.computed == 1
    assert np.array_equal(again[0], vectors[1])
    assert np.array_equal(again[2], vectors[0])
    assert [v is None for v in await replay.known(["gamma", "delta"])] == [False, True]


async def test_queries_pass_through_and_are_not_stored() -> None:
    inner, store = HashingEmbedder(32), InMemoryVectorStore()
    embedder = StoredEmbedder(inner, store)

    [vector] = await embedder.embed(["what is alpha"], "query")

    assert np.allclose(vector, inner.vector("what is alpha"))
    assert embedder.computed == 0
    assert await embedder.known(["what is alpha"]) == [None]
