"""Knowledge chunking and indexing (reference §14) with in-memory ports."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest

from engine.adapters.memory import HashingEmbedder, InMemoryMemoryStore
from engine.ingest.knowledge import CHUNK_CHARS, CHUNK_OVERLAP, EMBED_BATCH, chunk, index_document
from engine.ports import InputType, Vector
from engine.records import ScopeFields
from engine.retrieval.vector_index import ExactVectorIndex
from engine.scoping import TenantFilter

AGENT = "0xAgent"
AT = 1_589_716_800_000


def scope(user: str | None = None) -> ScopeFields:
    return ScopeFields(
        agent_wallet=AGENT, user_address=user, thread_id=None, mode=None, hai_id=None
    )


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[int, InputType]] = []

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        self.calls.append((len(texts), input_type))
        return await super().embed(texts, input_type)


# -- chunk ---------------------------------------------------------------------------------


def test_short_text_is_one_chunk() -> None:
    assert chunk("hello world") == ["hello world"]
    text = "x" * CHUNK_CHARS
    assert chunk(text) == [text]


def test_blank_text_has_no_chunks() -> None:
    assert chunk("") == []
    assert chunk(" \n\t\n ") == []


def test_long_text_without_newlines_has_exact_sizes_and_overlaps() -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(3500))
    chunks = chunk(text)
    # starts 0, 1220, 2440; the last window reaches the end (2440..3500)
    assert [len(c) for c in chunks] == [1400, 1400, 1060]
    assert chunks == [text[0:1400], text[1220:2620], text[2440:3500]]
    for a, b in itertools.pairwise(chunks):
        assert a[-CHUNK_OVERLAP:] == b[:CHUNK_OVERLAP]


def test_text_one_overlap_past_a_window_ends_with_a_short_chunk() -> None:
    text = "y" * 1401
    assert chunk(text) == [text[:1400], text[1220:]]


def test_cut_at_last_newline_past_half_the_window() -> None:
    text = "a" * 1000 + "\n" + "b" * 1000
    chunks = chunk(text)
    # first window cut before the newline at 1000 (> 700); next starts at 1000 - 180
    assert chunks[0] == "a" * 1000
    assert chunks[1] == text[820:]
    assert chunks[0][-CHUNK_OVERLAP:] == chunks[1][:CHUNK_OVERLAP]


def test_newline_in_first_half_is_not_a_cut() -> None:
    text = "a" * 600 + "\n" + "b" * 1500
    chunks = chunk(text)
    assert chunks[0] == text[:1400]
    assert chunks[1] == text[1220:2620]


def test_newline_exactly_at_half_is_not_a_cut() -> None:
    text = "a" * 700 + "\n" + "b" * 1500
    assert chunk(text)[0] == text[:1400]
    text = "a" * 701 + "\n" + "b" * 1500
    assert chunk(text)[0] == "a" * 701


def test_newline_right_after_the_window_keeps_the_full_window() -> None:
    text = "a" * 800 + "\n" + "b" * 599 + "\n" + "c" * 500
    assert chunk(text)[0] == text[:1400]


def test_cuts_at_the_last_of_several_newlines() -> None:
    lines = [f"line {i:04d} " + "z" * 80 for i in range(60)]
    text = "\n".join(lines)
    chunks = chunk(text)
    assert len(chunks) > 2
    position = 0
    for piece in chunks[:-1]:
        end = position + len(piece)
        assert text[position:end] == piece
        # cut just before the window's last newline, which lies past half the window
        assert text[end] == "\n"
        assert text.rfind("\n", position, position + CHUNK_CHARS) == end
        assert len(piece) > CHUNK_CHARS / 2
        position = end - CHUNK_OVERLAP
    assert text[position:] == chunks[-1]
    # the overlap-free parts rebuild the text exactly (the cut newline opens the next chunk)
    assert chunks[0] + "".join(c[CHUNK_OVERLAP:] for c in chunks[1:]) == text


def test_whitespace_only_windows_are_dropped() -> None:
    text = "a" * 10 + " " * 3000 + "b" * 10
    chunks = chunk(text, size=1000, overlap=100)
    assert chunks[0].startswith("a" * 10)
    assert chunks[-1].endswith("b" * 10)
    assert all(c.strip() for c in chunks)
    assert len(chunks) < len(chunk("x" * len(text), size=1000, overlap=100))


@pytest.mark.parametrize(("size", "overlap"), [(10, 10), (10, 11), (0, 0), (10, -1)])
def test_bad_window_is_rejected(size: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="overlap"):
        chunk("some text", size=size, overlap=overlap)


def test_large_overlap_after_newline_cut_still_advances() -> None:
    # a cut at 6 of 10 with overlap 9 would step back; the window still moves forward
    text = ("abcdef\n" * 200).strip()
    chunks = chunk(text, size=10, overlap=9)
    assert chunks
    assert text.endswith(chunks[-1])
    assert len(chunks) <= len(text)


# -- index_document ---------------------------------------------------------------------------


LONG = "\n".join(f"Paragraph {i}: the deploy runbook says restart worker {i}." for i in range(80))


async def test_index_document_is_idempotent_and_stored_as_knowledge() -> None:
    memory, embedder = InMemoryMemoryStore(), CountingEmbedder()
    kwargs: dict[str, Any] = {
        "scope": scope("U1"),
        "content": LONG,
        "key": "runbook.md",
        "source_format": "file",
        "uri": None,
        "at": AT,
        "metadata": {"team": "ops", "type": "spoofed", "chunk": 99, "status": "deleted"},
    }
    ids = await index_document(memory, embedder, **kwargs)
    expected = chunk(LONG)
    assert len(ids) == len(expected) > 1
    assert len(set(ids)) == len(ids)
    assert sum(n for n, _ in embedder.calls) == len(expected)
    assert {t for _, t in embedder.calls} == {"document"}

    again = await index_document(memory, embedder, **kwargs)
    assert again == ids
    assert sum(n for n, _ in embedder.calls) == len(expected)  # nothing re-embedded

    rows = await memory.active_rows(TenantFilter(AGENT, "U1"), sources=["knowledge"])
    assert len(rows) == len(expected)
    by_id = {r.vector_id: r for r in rows}
    for n, vector_id in enumerate(ids, start=1):
        row = by_id[vector_id]
        assert row.source == "knowledge"
        assert row.content == expected[n - 1]
        assert row.created_at == AT
        assert row.embedding_model == embedder.model
        assert row.metadata == {
            "team": "ops",
            "scope": "workspace",
            "type": "knowledge",
            "key": "runbook.md",
            "sourceFormat": "file",
            "chunk": n,
            "chunks": len(expected),
        }
    # another user's workspace and the agent's genesis knowledge do not see these rows
    assert await memory.active_rows(TenantFilter(AGENT, "U2"), sources=["knowledge"]) == []
    assert await memory.active_rows(TenantFilter(AGENT, None), sources=["knowledge"]) == []


async def test_genesis_knowledge_is_user_less_and_found_by_the_vectors_index() -> None:
    memory, embedder = InMemoryMemoryStore(), HashingEmbedder()
    uri = "ipfs://bafyCID/agent-notes.txt"
    ids = await index_document(
        memory,
        embedder,
        scope=scope(None),
        content="The agent speaks only about tide tables and harbour schedules.",
        key=None,
        source_format="text",
        uri=uri,
        at=AT,
        metadata=None,
    )
    assert len(ids) == 1
    [row] = await memory.active_rows(TenantFilter(AGENT, None), sources=["knowledge"])
    assert row.metadata == {
        "scope": "genesis",
        "type": "knowledge",
        "sourceFormat": "text",
        "uri": uri,
        "chunk": 1,
        "chunks": 1,
    }
    assert row.scope.user_address is None
    assert row.scope.mode is None
    [query] = await embedder.embed(["tide tables harbour"], "query")
    hits = await ExactVectorIndex(memory).search(
        TenantFilter(AGENT, None, mode="global"), query, model=embedder.model, k=3
    )
    assert [r.vector_id for r, _ in hits] == ids


async def test_ids_depend_on_tenant_and_document() -> None:
    memory, embedder = InMemoryMemoryStore(), HashingEmbedder()

    async def index(user: str | None, key: str | None, uri: str | None = None) -> list[str]:
        return await index_document(
            memory,
            embedder,
            scope=scope(user),
            content="same words",
            key=key,
            source_format="paste",
            uri=uri,
            at=AT,
            metadata=None,
        )

    a = await index("U1", "k1")
    assert await index("U1", "k1") == a
    assert await index("U2", "k1") != a
    assert await index("U1", "k2") != a
    assert await index(None, "k1") != a
    # without key or uri the content identifies the document
    assert await index("U1", None) == await index("U1", None)


async def test_blank_document_stores_nothing() -> None:
    memory, embedder = InMemoryMemoryStore(), CountingEmbedder()
    ids = await index_document(
        memory,
        embedder,
        scope=scope("U1"),
        content="  \n ",
        key="empty",
        source_format="paste",
        uri=None,
        at=AT,
        metadata=None,
    )
    assert ids == []
    assert embedder.calls == []


async def test_large_document_is_embedded_in_batches() -> None:
    memory, embedder = InMemoryMemoryStore(), CountingEmbedder()
    text = " ".join(f"word{i}" for i in range(20_000))
    ids = await index_document(
        memory,
        embedder,
        scope=scope("U1"),
        content=text,
        key="big",
        source_format="file",
        uri=None,
        at=AT,
        metadata=None,
    )
    assert len(ids) > EMBED_BATCH
    assert all(n <= EMBED_BATCH for n, _ in embedder.calls)
    assert sum(n for n, _ in embedder.calls) == len(ids)
    assert len(embedder.calls) == -(-len(ids) // EMBED_BATCH)
