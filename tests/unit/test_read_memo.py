"""The search's in-process tier of store reads (`engine.retrieval.reads`): kept under the
namespace token they were read at, so a write (a new token) is never answered from memory."""

from __future__ import annotations

import asyncio

import pytest

from engine.retrieval.reads import ReadMemo


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Store:
    def __init__(self) -> None:
        self.reads = 0
        self.value = "v1"

    async def read(self) -> str:
        self.reads += 1
        await asyncio.sleep(0)
        return self.value


async def test_a_read_is_kept_under_its_token_and_a_new_token_reads_again() -> None:
    memo, store = ReadMemo(ttl_seconds=60), Store()
    assert await memo.read("working", "t1", store.read) == "v1"
    assert await memo.read("working", "t1", store.read) == "v1"
    assert store.reads == 1
    store.value = "v2"  # a write, announced by a bumped namespace: a new token
    assert await memo.read("working", "t2", store.read) == "v2"
    assert store.reads == 2
    assert memo.loads == 2


async def test_keys_are_separate() -> None:
    memo, store = ReadMemo(ttl_seconds=60), Store()
    await memo.read(("scene", "alice"), "t", store.read)
    await memo.read(("scene", "bob"), "t", store.read)
    assert store.reads == 2


async def test_without_a_token_nothing_is_kept() -> None:
    memo, store = ReadMemo(ttl_seconds=60), Store()
    await memo.read("working", None, store.read)
    await memo.read("working", None, store.read)
    assert store.reads == 2


async def test_a_kept_read_expires_after_the_ttl() -> None:
    clock = Clock()
    memo, store = ReadMemo(ttl_seconds=10, clock=clock), Store()
    await memo.read("working", "t", store.read)
    clock.now = 9.9
    await memo.read("working", "t", store.read)
    assert store.reads == 1
    clock.now = 10.0  # a lost invalidation is served no longer than the query cache's TTL
    await memo.read("working", "t", store.read)
    assert store.reads == 2


async def test_concurrent_misses_share_one_load() -> None:
    memo, store = ReadMemo(ttl_seconds=60), Store()
    results = await asyncio.gather(*(memo.read("archives", "t", store.read) for _ in range(5)))
    assert results == ["v1"] * 5
    assert store.reads == 1


async def test_a_failed_load_is_not_kept() -> None:
    memo = ReadMemo(ttl_seconds=60)
    calls = 0

    async def failing() -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ConnectionError("store down")
        return "back"

    with pytest.raises(ConnectionError):
        await memo.read("patterns", "t", failing)
    assert await memo.read("patterns", "t", failing) == "back"


async def test_the_least_recently_used_read_goes_first() -> None:
    memo, store = ReadMemo(ttl_seconds=60, max_entries=2), Store()
    await memo.read("a", "t", store.read)
    await memo.read("b", "t", store.read)
    await memo.read("a", "t", store.read)  # a is now the newest
    await memo.read("c", "t", store.read)  # evicts b
    assert store.reads == 3
    await memo.read("a", "t", store.read)
    assert store.reads == 3
    await memo.read("b", "t", store.read)
    assert store.reads == 4


def test_rejects_an_empty_memo() -> None:
    with pytest.raises(ValueError, match="max_entries"):
        ReadMemo(ttl_seconds=60, max_entries=0)
