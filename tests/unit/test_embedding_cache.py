"""`CachedEmbedder`: a namespaced, fail-soft cache in front of an embedder."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from engine.adapters.embedding_cache import EMBEDDING_TTL_SECONDS, CachedEmbedder, embedding_key
from engine.adapters.memory import HashingEmbedder, InMemoryQueryCache
from engine.errors import DependencyFailed
from engine.ports import InputType, Vector


class CountingEmbedder:
    """A real (hashing) embedder under any model name, recording which texts it embedded."""

    def __init__(self, model: str = "model-a", dimension: int = 64) -> None:
        self._model = model
        self._inner = HashingEmbedder(dimension)
        self.calls: list[tuple[InputType, list[str]]] = []

    @property
    def model(self) -> str:
        return self._model

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        self.calls.append((input_type, list(texts)))
        return await self._inner.embed(texts, input_type)

    @property
    def embedded(self) -> list[str]:
        return [t for _, texts in self.calls for t in texts]


class RecordingCache(InMemoryQueryCache):
    def __init__(self) -> None:
        super().__init__()
        self.ttls: list[int] = []

    async def set(self, key: str, value: bytes, ttl_seconds: int) -> None:
        self.ttls.append(ttl_seconds)
        await super().set(key, value, ttl_seconds)


class RaisingCache(InMemoryQueryCache):
    """A cache whose every read and write fails like an unreachable Redis."""

    async def get(self, key: str) -> bytes | None:
        raise DependencyFailed("cache is down")

    async def set(self, key: str, value: bytes, ttl_seconds: int) -> None:
        raise DependencyFailed("cache is down")


class GarbageCache(InMemoryQueryCache):
    """A cache that answers every read with bytes that are not a vector of the dimension."""

    def __init__(self, blob: bytes) -> None:
        super().__init__()
        self.blob = blob

    async def get(self, key: str) -> bytes | None:
        return self.blob


# --- hits and misses ------------------------------------------------------------------------


async def test_the_second_call_is_served_from_the_cache() -> None:
    inner = CountingEmbedder()
    embedder = CachedEmbedder(inner, InMemoryQueryCache())

    [first] = await embedder.embed(["We adopted a greyhound"], "document")
    [second] = await embedder.embed(["We adopted a greyhound"], "document")

    assert inner.embedded == ["We adopted a greyhound"]
    np.testing.assert_array_equal(first, second)


async def test_only_the_missing_texts_reach_the_inner_embedder_in_input_order() -> None:
    inner = CountingEmbedder()
    embedder = CachedEmbedder(inner, InMemoryQueryCache())
    await embedder.embed(["b"], "document")
    inner.calls.clear()

    vectors = await embedder.embed(["a", "b", "c"], "document")

    assert inner.calls == [("document", ["a", "c"])]
    expected = await HashingEmbedder(64).embed(["a", "b", "c"], "document")
    for got, want in zip(vectors, expected, strict=True):
        np.testing.assert_array_equal(got, want)


async def test_values_round_trip_exactly_as_float32() -> None:
    inner = CountingEmbedder(dimension=384)
    cache = InMemoryQueryCache()
    embedder = CachedEmbedder(inner, cache)
    text = "The quarterly review moved to Thursday"

    [fresh] = await embedder.embed([text], "query")
    [cached] = await CachedEmbedder(CountingEmbedder(dimension=384), cache).embed([text], "query")

    [direct] = await HashingEmbedder(384).embed([text], "query")
    assert cached.dtype == np.float32
    assert cached.shape == (384,)
    np.testing.assert_array_equal(cached, direct)
    np.testing.assert_array_equal(fresh, direct)
    blob = cache.values[embedding_key(inner.model, 384, "query", text)]
    assert blob == direct.astype("<f4").tobytes()


async def test_entries_are_written_with_the_24_hour_ttl() -> None:
    cache = RecordingCache()
    await CachedEmbedder(CountingEmbedder(), cache).embed(["a", "b"], "document")
    assert cache.ttls == [EMBEDDING_TTL_SECONDS, EMBEDDING_TTL_SECONDS]
    assert EMBEDDING_TTL_SECONDS == 86_400


async def test_model_and_dimension_are_those_of_the_inner_embedder() -> None:
    embedder = CachedEmbedder(CountingEmbedder("model-x", 32), InMemoryQueryCache())
    assert (embedder.model, embedder.dimension) == ("model-x", 32)


# --- keys -----------------------------------------------------------------------------------


def test_keys_differ_by_model_dimension_input_type_and_text_fixes_16_25() -> None:
    base = ("model-a", 384, "query", "hello")
    variants = [
        base,
        ("model-b", 384, "query", "hello"),
        ("model-a", 1024, "query", "hello"),
        ("model-a", 384, "document", "hello"),
        ("model-a", 384, "query", "hello!"),
    ]
    keys = [embedding_key(m, d, t, x) for m, d, t, x in variants]  # type: ignore[arg-type]
    assert len(set(keys)) == len(keys)
    assert embedding_key(*base) == embedding_key(*base)  # type: ignore[arg-type]
    assert all(k.startswith("embedding:") for k in keys)


async def test_a_model_change_does_not_serve_the_old_models_vectors_fixes_16_25() -> None:
    cache = InMemoryQueryCache()
    await CachedEmbedder(CountingEmbedder("model-a"), cache).embed(["hello"], "query")

    other = CountingEmbedder("model-b")
    await CachedEmbedder(other, cache).embed(["hello"], "query")

    assert other.embedded == ["hello"]


async def test_a_dimension_change_does_not_serve_the_old_vectors_fixes_16_25() -> None:
    cache = InMemoryQueryCache()
    await CachedEmbedder(CountingEmbedder("model-a", 64), cache).embed(["hello"], "query")

    wider = CountingEmbedder("model-a", 128)
    [vector] = await CachedEmbedder(wider, cache).embed(["hello"], "query")

    assert wider.embedded == ["hello"]
    assert vector.shape == (128,)


async def test_a_query_and_a_document_of_the_same_text_are_cached_apart_fixes_16_25() -> None:
    inner = CountingEmbedder()
    embedder = CachedEmbedder(inner, InMemoryQueryCache())

    await embedder.embed(["hello"], "document")
    await embedder.embed(["hello"], "query")
    await embedder.embed(["hello"], "query")

    assert inner.calls == [("document", ["hello"]), ("query", ["hello"])]


# --- a misbehaving cache ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "blob",
    [
        b"",
        b"\x00" * 7,  # not even whole floats
        b"\x00\x00\x80\x3f" * 63,  # one float short
        b"\x00\x00\x80\x3f" * 65,  # one float too many
        b'{"embedding": [0.1, 0.2]}',  # the reference's JSON value
    ],
)
async def test_a_value_of_the_wrong_length_falls_back_to_the_inner_embedder(blob: bytes) -> None:
    inner = CountingEmbedder()
    embedder = CachedEmbedder(inner, GarbageCache(blob))

    [vector] = await embedder.embed(["hello"], "query")

    assert inner.embedded == ["hello"]
    [expected] = await HashingEmbedder(64).embed(["hello"], "query")
    np.testing.assert_array_equal(vector, expected)


async def test_a_cache_that_raises_falls_back_to_the_inner_embedder() -> None:
    inner = CountingEmbedder()
    embedder = CachedEmbedder(inner, RaisingCache())

    [vector] = await embedder.embed(["hello"], "query")

    assert inner.embedded == ["hello"]
    [expected] = await HashingEmbedder(64).embed(["hello"], "query")
    np.testing.assert_array_equal(vector, expected)
