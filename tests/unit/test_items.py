"""Item lifecycle service functions (`engine.upkeep.items`) over the in-memory store."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from engine.adapters.memory import HashingEmbedder
from engine.adapters.memory.items import InMemoryItemStore
from engine.errors import InputRejected, NotFound
from engine.ports import InputType, Vector
from engine.records import MemoryRow, ScopeFields
from engine.scoping import TenantFilter
from engine.upkeep.conflicts import resolve_conflict
from engine.upkeep.items import (
    changed_layers,
    changed_scope,
    delete_item,
    get_item,
    update_item,
)
from tests.support.embedders import WrappedEmbedder

T0 = 1_600_000_000_000
AGENT, USER = "0xAgent", "0xUser"
SCOPE = ScopeFields(AGENT, USER, "thread-1", "global", None)
WHERE = TenantFilter(AGENT, USER)


class CountingEmbedder(WrappedEmbedder):
    """`HashingEmbedder`, counting texts and remembering input types."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(64)
        self.texts: list[str] = []
        self.input_types: list[InputType] = []

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        self.texts.extend(texts)
        self.input_types.append(input_type)
        return await self.inner.embed(texts, input_type)


@pytest.fixture
def embedder() -> CountingEmbedder:
    return CountingEmbedder()


async def seed(
    store: InMemoryItemStore, vector_id: str, content: str, **metadata: Any
) -> MemoryRow:
    [vector] = await HashingEmbedder(64).embed([content], "document")
    row = MemoryRow(
        vector_id,
        SCOPE,
        content,
        vector,
        "old-model",
        "fact",
        T0,
        {"status": "active", "type": "agent_memory_turn_graph", "factHash": "abc", **metadata},
    )
    assert await store.insert_if_absent(row)
    return row


@pytest.fixture
async def store() -> InMemoryItemStore:
    s = InMemoryItemStore()
    await seed(s, "a", "I live in Paris")
    await seed(s, "b", "I live in Lyon")
    return s


async def test_get_returns_row_and_missing_is_not_found(store: InMemoryItemStore) -> None:
    assert (await get_item(store, WHERE, "a")).content == "I live in Paris"
    with pytest.raises(NotFound):
        await get_item(store, WHERE, "nope")


async def test_get_rejects_blank_agent(store: InMemoryItemStore) -> None:
    with pytest.raises(InputRejected):
        await get_item(store, TenantFilter(" ", USER), "a")


async def test_update_reembeds_only_when_trimmed_content_changes(
    store: InMemoryItemStore, embedder: CountingEmbedder
) -> None:
    same = await update_item(store, embedder, WHERE, "a", content="  I live in Paris ", at=T0 + 1)
    assert embedder.texts == []
    assert same.embedding_model == "old-model"

    row = await update_item(store, embedder, WHERE, "a", content=" I live in Rome ", at=T0 + 2)
    assert embedder.texts == ["I live in Rome"]
    assert embedder.input_types == ["document"]
    assert row.content == "I live in Rome"
    assert row.embedding_model == embedder.model
    assert row.embedding_dim == embedder.dimension
    [expected] = await HashingEmbedder(64).embed(["I live in Rome"], "document")
    np.testing.assert_allclose(row.embedding, expected)
    assert (await get_item(store, WHERE, "a")).content == "I live in Rome"


async def test_update_merges_metadata_and_protects_system_keys(
    store: InMemoryItemStore, embedder: CountingEmbedder
) -> None:
    row = await update_item(
        store,
        embedder,
        WHERE,
        "a",
        metadata={"topic": "home", "type": "hacked", "status": "deleted", "factHash": "x"},
        retention="pinned",
        confidence=0.4,
        at=T0 + 1,
    )
    assert row.metadata["topic"] == "home"
    assert row.metadata["type"] == "agent_memory_turn_graph"
    assert row.metadata["factHash"] == "abc"
    assert row.status == "active"
    assert row.metadata["retention"] == "pinned"
    assert row.metadata["confidence"] == 0.4
    again = await update_item(store, embedder, WHERE, "a", metadata={"mood": 1}, at=T0 + 2)
    assert again.metadata["topic"] == "home"
    assert again.metadata["mood"] == 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"status": "deleted"},
        {"status": "bogus"},
        {"confidence": 1.5},
        {"retention": "  "},
        {"content": "   "},
        {"metadata": {"a.b": 1}},
        {"metadata": {"$set": 1}},
    ],
)
async def test_update_rejects_bad_input(
    store: InMemoryItemStore, embedder: CountingEmbedder, kwargs: dict[str, Any]
) -> None:
    before = await get_item(store, WHERE, "a")
    with pytest.raises(InputRejected):
        await update_item(store, embedder, WHERE, "a", at=T0 + 1, **kwargs)
    assert await get_item(store, WHERE, "a") == before


async def test_update_status_moves_validity(
    store: InMemoryItemStore, embedder: CountingEmbedder
) -> None:
    row = await update_item(store, embedder, WHERE, "a", status="superseded", at=T0 + 5)
    assert (row.status, row.invalid_at) == ("superseded", T0 + 5)
    assert (await get_item(store, WHERE, "a")).status == "superseded"  # history stays readable
    row = await update_item(store, embedder, WHERE, "a", status="archived", at=T0 + 6)
    assert (row.status, row.invalid_at, row.superseded_by) == ("archived", None, None)


async def test_soft_delete_hides_row_and_zeroes_decay(store: InMemoryItemStore) -> None:
    row = await delete_item(store, WHERE, "a", at=T0 + 3)
    assert row.status == "deleted"
    assert row.metadata["deletedAt"] == T0 + 3
    assert row.decay_score == 0.0
    with pytest.raises(NotFound):
        await get_item(store, WHERE, "a")
    with pytest.raises(NotFound):
        await delete_item(store, WHERE, "a", at=T0 + 4)
    assert await store.status_of("a") == "deleted"  # still stored
    removed = await delete_item(store, WHERE, "a", hard=True, at=T0 + 5)  # purge
    assert removed.vector_id == "a"
    assert not await store.exists("a")


async def test_hard_delete_removes_row(store: InMemoryItemStore) -> None:
    await delete_item(store, WHERE, "b", hard=True, at=T0 + 1)
    assert not await store.exists("b")
    with pytest.raises(NotFound):
        await delete_item(store, WHERE, "b", hard=True, at=T0 + 2)


async def test_resolve_supersede(store: InMemoryItemStore, embedder: CountingEmbedder) -> None:
    [loser] = await resolve_conflict(
        store,
        embedder,
        WHERE,
        "a",
        resolution="supersede",
        winning_id="b",
        reason=" moved ",
        at=T0 + 9,
    )
    assert loser.status == "superseded"
    assert (loser.superseded_by, loser.invalid_at) == ("b", T0 + 9)
    assert loser.metadata["conflictResolution"] == "supersede"
    assert loser.metadata["conflictResolvedAt"] == T0 + 9
    assert loser.metadata["winningMemoryId"] == "b"
    assert loser.metadata["conflictReason"] == "moved"
    assert (await get_item(store, WHERE, "b")).status == "active"
    assert embedder.texts == []


@pytest.mark.parametrize("resolution", ["keep", "ignore"])
async def test_resolve_keep_and_ignore_only_record(
    store: InMemoryItemStore, embedder: CountingEmbedder, resolution: str
) -> None:
    [row] = await resolve_conflict(store, embedder, WHERE, "a", resolution=resolution, at=T0 + 1)
    assert row.metadata["conflictResolution"] == resolution
    assert row.status == "active"
    assert row.invalid_at is None
    assert "winningMemoryId" not in row.metadata


async def test_resolve_merge_appends_and_reembeds_winner(
    store: InMemoryItemStore, embedder: CountingEmbedder
) -> None:
    loser, winner = await resolve_conflict(
        store, embedder, WHERE, "a", resolution="merge", winning_id="b", at=T0 + 7
    )
    assert winner.vector_id == "b"
    assert winner.content == "I live in Lyon\nI live in Paris"
    assert embedder.texts == ["I live in Lyon\nI live in Paris"]
    assert winner.embedding_model == embedder.model
    assert winner.metadata["mergedFrom"] == ["a"]
    assert (loser.status, loser.superseded_by, loser.invalid_at) == ("superseded", "b", T0 + 7)
    assert loser.metadata["conflictResolution"] == "merge"


async def test_resolve_merge_skips_content_already_in_winner(
    store: InMemoryItemStore, embedder: CountingEmbedder
) -> None:
    await seed(store, "c", "I live in Lyon, and before: I live in Paris")
    _, winner = await resolve_conflict(
        store, embedder, WHERE, "a", resolution="merge", winning_id="c", at=T0 + 1
    )
    assert winner.content == "I live in Lyon, and before: I live in Paris"
    assert embedder.texts == []


@pytest.mark.parametrize(
    ("resolution", "winning_id", "error"),
    [
        ("bogus", "b", InputRejected),
        ("supersede", None, InputRejected),
        ("merge", None, InputRejected),
        ("supersede", "a", InputRejected),
        ("supersede", "nope", NotFound),
        ("keep", "nope", NotFound),
    ],
)
async def test_resolve_rejects(
    store: InMemoryItemStore,
    embedder: CountingEmbedder,
    resolution: str,
    winning_id: str | None,
    error: type[Exception],
) -> None:
    before = await get_item(store, WHERE, "a")
    with pytest.raises(error):
        await resolve_conflict(
            store, embedder, WHERE, "a", resolution=resolution, winning_id=winning_id, at=T0 + 1
        )
    assert await get_item(store, WHERE, "a") == before


async def test_resolve_needs_current_rows(
    store: InMemoryItemStore, embedder: CountingEmbedder
) -> None:
    await resolve_conflict(
        store, embedder, WHERE, "a", resolution="supersede", winning_id="b", at=T0 + 1
    )
    with pytest.raises(InputRejected):  # the loser is already superseded
        await resolve_conflict(
            store, embedder, WHERE, "a", resolution="supersede", winning_id="b", at=T0 + 2
        )
    with pytest.raises(InputRejected):  # the winner is superseded
        await resolve_conflict(
            store, embedder, WHERE, "b", resolution="merge", winning_id="a", at=T0 + 2
        )
    await delete_item(store, WHERE, "b", at=T0 + 3)
    await seed(store, "c", "I like tea")
    with pytest.raises(NotFound):  # a deleted winner does not exist
        await resolve_conflict(
            store, embedder, WHERE, "c", resolution="supersede", winning_id="b", at=T0 + 4
        )


async def test_out_of_scope_is_not_found(
    store: InMemoryItemStore, embedder: CountingEmbedder
) -> None:
    before = await get_item(store, WHERE, "a")
    for where in (
        TenantFilter("0xOther", USER),
        TenantFilter(AGENT, "0xSomeoneElse"),
        TenantFilter(AGENT, None),
        TenantFilter(AGENT.lower(), USER),
    ):
        with pytest.raises(NotFound):
            await get_item(store, where, "a")
        with pytest.raises(NotFound):
            await update_item(store, embedder, where, "a", content="x", at=T0 + 1)
        with pytest.raises(NotFound):
            await delete_item(store, where, "a", at=T0 + 1)
        with pytest.raises(NotFound):
            await delete_item(store, where, "a", hard=True, at=T0 + 1)
        with pytest.raises(NotFound):
            await resolve_conflict(store, embedder, where, "a", resolution="keep", at=T0 + 1)
    assert await get_item(store, WHERE, "a") == before
    assert embedder.texts == []


async def test_shared_filter_does_not_reach_agent_rows(embedder: CountingEmbedder) -> None:
    store = InMemoryItemStore()
    [vector] = await HashingEmbedder(64).embed(["tools"], "document")
    agent_scope = ScopeFields(AGENT, None, None, None, None)
    await store.insert_if_absent(MemoryRow("k", agent_scope, "tools", vector, "m", "knowledge", T0))
    with pytest.raises(NotFound):
        await get_item(store, TenantFilter(AGENT, USER, shared=True), "k")
    assert (await get_item(store, TenantFilter(AGENT, None), "k")).content == "tools"


async def test_changed_scope_and_layers(store: InMemoryItemStore) -> None:
    row = await get_item(store, WHERE, "a")
    scope = changed_scope(row)
    assert scope.wire() == {
        "agentWallet": AGENT,
        "userAddress": USER,
        "threadId": "thread-1",
        "mode": "global",
    }
    assert changed_layers([row]) == ["graph", "vectors"]
