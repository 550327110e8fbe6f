"""`StoredEmbedder` over the in-memory `VectorStore`: a document text is embedded once, ever;
stored vectors are read back instead of running the model (replays run no model)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from engine.adapters.memory import HashingEmbedder, InMemoryVectorStore
from engine.embedding_store import StoredEmbedder, group_key, vector_key
from engine.ports import Vector
from tests.support.embedders import CallLog


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


class KeyLog(InMemoryVectorStore):
    """Records the keys of every read and every write."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[list[str]] = []
        self.written: list[list[str]] = []

    async def get_many(self, keys: Sequence[str]) -> dict[str, Vector]:
        self.read.append(list(keys))
        return await super().get_many(keys)

    async def put_many(self, vectors: Mapping[str, Vector]) -> None:
        self.written.append(list(vectors))
        await super().put_many(vectors)


TURN = ["user: Ana: We moved to Porto.", "We moved to Porto.", "Nice!"]
OTHER = ["user: Ana: I teach maths.", "I teach maths.", "Nice!"]


async def test_a_group_is_one_record_written_once_and_read_back_with_one_key() -> None:
    hashing = HashingEmbedder(32)
    model, store = CallLog(hashing), KeyLog()
    live = StoredEmbedder(model, store)

    first = await live.embed_groups([TURN, OTHER, ["a fact"], TURN])

    # one model call of every text once; the shared message is embedded once
    assert model.calls == [[*TURN, *OTHER[:2], "a fact"]]
    assert live.computed == 6
    keys = [group_key(model.model, 32, g) for g in (TURN, OTHER, ["a fact"])]
    assert store.written == [keys]  # one record a group, none per message
    assert keys[2] == vector_key(model.model, 32, "a fact")  # a lone text: its usual key
    for got, text in zip(first[0], TURN, strict=True):
        assert np.allclose(got, hashing.vector(text))

    replay_model, replay_store = CallLog(HashingEmbedder(32)), KeyLog()
    replay_store._vectors = store._vectors  # another process, the same durable store
    again = await StoredEmbedder(replay_model, replay_store).embed_groups([OTHER, TURN])
    assert replay_model.calls == []
    assert replay_store.read == [keys[1::-1]]  # one key a turn, one read
    assert [v.tobytes() for v in again[1]] == [v.tobytes() for v in first[0]]


async def test_a_store_written_before_groups_gives_a_group_without_the_model() -> None:
    inner, store = HashingEmbedder(32), InMemoryVectorStore()
    await StoredEmbedder(inner, store).embed(TURN, "document")  # one record a text
    model = CallLog(inner)
    upgraded = StoredEmbedder(model, store)

    [group] = await upgraded.embed_groups([TURN])

    assert model.calls == []
    assert upgraded.computed == 0
    key = group_key(inner.model, 32, TURN)
    assert (await store.get_many([key]))[key].shape == (3 * 32,)  # the group's record now
    assert all(np.allclose(v, inner.vector(t)) for v, t in zip(group, TURN, strict=True))


async def test_a_group_record_of_the_wrong_size_is_made_again() -> None:
    inner, store = HashingEmbedder(32), InMemoryVectorStore()
    await store.put_many({group_key(inner.model, 32, TURN): np.ones(32, dtype=np.float32)})
    model = CallLog(inner)

    [group] = await StoredEmbedder(model, store).embed_groups([TURN])

    assert model.calls == [TURN]
    assert np.allclose(group[1], inner.vector(TURN[1]))
