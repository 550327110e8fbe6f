"""The local MiniLM embedder, run on the real int8 ONNX model shipped in its PyPI package."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.ports import Embedder, InputType, Vector

LISBON = "I live in Lisbon"
LISBON_PARAPHRASE = "My home city is Lisbon"
UNRELATED = "The stock market fell sharply"


@pytest.fixture(scope="module")
def embedder() -> LocalMiniLMEmbedder:
    return LocalMiniLMEmbedder(threads=1)


def test_identifies_its_vector_space(embedder: LocalMiniLMEmbedder) -> None:
    port: Embedder = embedder
    assert port.model == "all-MiniLM-L6-v2-int8"
    assert port.dimension == 384


def test_vectors_are_384_float32_unit_rows(embedder: LocalMiniLMEmbedder) -> None:
    matrix = embedder.embed_sync([LISBON, UNRELATED, ""])

    assert matrix.shape == (3, 384)
    assert matrix.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)


def test_same_text_gives_identical_vector(embedder: LocalMiniLMEmbedder) -> None:
    first = embedder.embed_sync([LISBON])
    second = embedder.embed_sync([LISBON])

    np.testing.assert_array_equal(first, second)


def test_paraphrase_is_much_closer_than_unrelated_text(embedder: LocalMiniLMEmbedder) -> None:
    anchor, paraphrase, unrelated = embedder.embed_sync([LISBON, LISBON_PARAPHRASE, UNRELATED])

    related = float(anchor @ paraphrase)
    unrelated_score = float(anchor @ unrelated)

    assert related > 0.6
    assert related - unrelated_score > 0.4


def test_batch_equals_one_by_one(embedder: LocalMiniLMEmbedder) -> None:
    # Different lengths, so the short texts are padded inside the batch.
    texts = [
        LISBON,
        "I moved from Porto to Lisbon in 2019 and now work as a nurse at the central hospital",
        UNRELATED,
        "ok",
    ]

    batched = embedder.embed_sync(texts)
    singles = np.stack([embedder.embed_sync([text])[0] for text in texts])

    np.testing.assert_allclose(batched, singles, atol=1e-5)


def test_more_texts_than_one_batch_keep_their_order(embedder: LocalMiniLMEmbedder) -> None:
    texts = [f"note number {i} about topic {i % 7}" for i in range(70)]

    batched = embedder.embed_sync(texts)

    assert batched.shape == (70, 384)
    for i in (0, 31, 32, 33, 69):
        np.testing.assert_allclose(batched[i], embedder.embed_sync([texts[i]])[0], atol=1e-5)


@pytest.mark.parametrize("input_type", ["document", "query"])
async def test_texts_of_mixed_lengths_come_back_in_their_order(
    embedder: LocalMiniLMEmbedder, input_type: InputType
) -> None:
    """Batches are formed by length (shortest first, to skip padding): every vector still
    answers its own text, in the caller's order, across several batches."""
    texts = [("word " * (1 + (i * 37) % 60)) + f"item {i}" for i in range(75)]
    alone = np.stack([embedder.embed_sync([t])[0] for t in texts])
    np.testing.assert_allclose(embedder.embed_sync(texts), alone, atol=1e-5)
    np.testing.assert_allclose(np.stack(await embedder.embed(texts, input_type)), alone, atol=1e-5)


def test_long_text_is_truncated_not_rejected(embedder: LocalMiniLMEmbedder) -> None:
    words = [f"word{i % 50}" for i in range(5_000)]
    long_text = " ".join(words)

    vector = embedder.embed_sync([long_text])[0]
    # Only the first 256 tokens count: appending more text changes nothing.
    extended = embedder.embed_sync([long_text + " and then a completely different ending"])[0]

    assert vector.shape == (384,)
    assert np.isfinite(vector).all()
    np.testing.assert_allclose(vector, extended, atol=1e-6)


async def test_empty_input_gives_no_vectors(embedder: LocalMiniLMEmbedder) -> None:
    assert embedder.embed_sync([]).shape == (0, 384)
    assert await embedder.embed([], "query") == []


def test_a_bare_string_is_rejected(embedder: LocalMiniLMEmbedder) -> None:
    with pytest.raises(TypeError):
        embedder.embed_sync(LISBON)


def test_rejects_zero_threads() -> None:
    with pytest.raises(ValueError, match="threads"):
        LocalMiniLMEmbedder(threads=0)


async def test_async_embed_matches_sync_and_ignores_input_type(
    embedder: LocalMiniLMEmbedder,
) -> None:
    texts = [f"memory {i}: {LISBON if i % 2 else UNRELATED}" for i in range(40)]

    as_queries = await embedder.embed(texts, "query")
    as_documents = await embedder.embed(texts, "document")

    assert len(as_queries) == 40
    assert all(v.shape == (384,) and v.dtype == np.float32 for v in as_queries)
    np.testing.assert_array_equal(np.stack(as_queries), np.stack(as_documents))
    np.testing.assert_allclose(np.stack(as_queries), embedder.embed_sync(texts), atol=1e-6)


async def test_async_embed_does_not_block_the_event_loop(embedder: LocalMiniLMEmbedder) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.001)
            ticks += 1

    task = asyncio.create_task(ticker())
    try:
        await embedder.embed([f"sentence {i} " * 20 for i in range(64)], "document")
    finally:
        task.cancel()

    assert ticks > 0


async def test_documents_are_embedded_at_a_lower_cpu_priority_and_queries_are_not() -> None:
    seen: dict[str, int] = {}
    polite = LocalMiniLMEmbedder(document_nice=7)
    plain = polite._run

    def priority_of(texts: Sequence[str], session: Any = None) -> Vector:
        seen[texts[0]] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        return plain(texts, session)

    polite._run = priority_of  # type: ignore[method-assign]
    [document] = await polite.embed(["a stored turn"], "document")
    [query] = await polite.embed(["a question"], "query")
    assert seen == {"a stored turn": 7, "a question": os.getpriority(os.PRIO_PROCESS, 0)}
    assert float(document @ query) < 0.99  # both really embedded


def test_rejects_zero_query_threads() -> None:
    with pytest.raises(ValueError, match="query_threads"):
        LocalMiniLMEmbedder(query_threads=0)


async def test_a_lone_query_runs_on_the_wider_session_and_concurrent_ones_do_not() -> None:
    wide = LocalMiniLMEmbedder(threads=1, query_threads=2)
    plain = wide._run
    sessions: list[object] = []

    def watched(texts: Sequence[str], session: Any = None) -> Vector:
        sessions.append(session)
        return plain(texts, session)

    wide._run = watched  # type: ignore[method-assign]
    [lone] = await wide.embed([LISBON], "query")
    assert sessions == [wide._lone]
    assert wide._lone is not None
    sessions.clear()
    # two at once: the first takes the wide session, the second (started while the first
    # is being embedded) the one-thread session, so they never oversubscribe the cores
    first, second = await asyncio.gather(
        wide.embed([LISBON], "query"), wide.embed([LISBON_PARAPHRASE], "query")
    )
    # (in either order: the worker threads may start in any order)
    assert len(sessions) == 2
    assert sessions.count(wide._lone) == 1
    assert sessions.count(None) == 1
    # the same vector space whichever session embedded it
    assert float(lone @ first[0]) == pytest.approx(1.0, abs=1e-5)
    assert np.allclose(second[0], wide.embed_sync([LISBON_PARAPHRASE])[0], atol=1e-5)
    [document] = await wide.embed([LISBON], "document")
    assert sessions[-1] is None  # documents never take the query session
    assert float(document @ lone) == pytest.approx(1.0, abs=1e-5)


def test_without_query_threads_there_is_one_session() -> None:
    assert LocalMiniLMEmbedder(threads=2, query_threads=2)._lone is None
