"""`invalidate_many`: a batch of writes bumps every counter their scopes' chains name, each
once, in one `bump` (the invalidation group's round trip per batch), on both caches."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest
from redis.asyncio import Redis

from engine.adapters.memory import InMemoryQueryCache
from engine.adapters.redis_cache import RedisQueryCache
from engine.ports import QueryCache
from engine.retrieval.invalidation import invalidate, invalidate_many
from engine.scoping import invalidation_keys, namespace_chain
from schemas.scope import Scope

TURN_LAYERS = ("working", "scene", "vectors")


@pytest.fixture(
    params=[
        pytest.param("memory", id="memory"),
        pytest.param("redis", id="redis", marks=pytest.mark.integration),
    ]
)
async def cache(
    request: pytest.FixtureRequest, unique: Callable[[str], str]
) -> AsyncIterator[QueryCache]:
    if request.param == "memory":
        yield InMemoryQueryCache()
        return
    prefix = unique("mnemo-invalidate")
    client = Redis.from_url(request.getfixturevalue("stack").redis_url)
    try:
        yield RedisQueryCache(client, prefix=prefix)
    finally:
        keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


def scope(agent: str, user: str | None, thread: str | None = None) -> Scope:
    body = {"agentWallet": agent, "userAddress": user, "threadId": thread}
    return Scope.parse({k: v for k, v in body.items() if v is not None})


async def tokens(cache: QueryCache, scopes: list[Scope]) -> list[str | None]:
    return await cache.tokens([namespace_chain(s) for s in scopes])


async def test_one_call_moves_the_token_of_every_written_scope(cache: QueryCache) -> None:
    written = [scope("0xA", "u1", "t1"), scope("0xA", "u2", "t2"), scope("0xB", "u1", "t1")]
    before = await tokens(cache, written)
    assert await invalidate_many(cache, [(s, TURN_LAYERS) for s in written]) > 0
    after = await tokens(cache, written)
    assert all(a is not None and a != b for a, b in zip(after, before, strict=True))


async def test_counters_shared_by_scopes_are_bumped_once(cache: QueryCache) -> None:
    # two threads of two users of one agent: the agent's counter is in both chains
    written = [scope("0xA", "u1", "t1"), scope("0xA", "u2", "t2"), scope("0xA", "u1", "t1")]
    distinct = {k for s in written for k in invalidation_keys(s, TURN_LAYERS)}
    assert len(distinct) < sum(len(invalidation_keys(s, TURN_LAYERS)) for s in written)
    assert await invalidate_many(cache, [(s, TURN_LAYERS) for s in written]) == len(distinct)


async def test_scopes_not_written_keep_their_tokens(cache: QueryCache) -> None:
    # another agent's scopes, the same user and thread names included
    untouched = [scope("0xOther", "u1", "t1"), scope("0xOther", "u1"), scope("0xOther", None)]
    before = await tokens(cache, untouched)
    await invalidate_many(cache, [(scope("0xA", "u1", "t1"), TURN_LAYERS)])
    assert await tokens(cache, untouched) == before


async def test_a_batch_changes_what_one_call_a_scope_changes(cache: QueryCache) -> None:
    """Every read token a scope-at-a-time `invalidate` moves, the batch moves too (the agent's
    and the user's tokens included: a read widened to the tenant must see the write)."""
    written = [scope("0xA", "u1", "t1"), scope("0xA", "u2", None)]
    readers = [*written, scope("0xA", "u1"), scope("0xA", None), scope("0xA", "u2", "t5")]
    before = await tokens(cache, readers)
    for s in written:
        await invalidate(cache, s, layers=TURN_LAYERS)
    one_by_one = await tokens(cache, readers)
    await invalidate_many(cache, [(s, TURN_LAYERS) for s in written])
    batched = await tokens(cache, readers)
    moved_one_by_one = [a != b for a, b in zip(one_by_one, before, strict=True)]
    moved_batched = [a != b for a, b in zip(batched, one_by_one, strict=True)]
    assert moved_batched == moved_one_by_one
    assert any(moved_batched)


async def test_no_writes_bump_nothing(cache: QueryCache) -> None:
    reader = [scope("0xA", "u1", "t1")]
    before = await tokens(cache, reader)
    assert await invalidate_many(cache, []) == 0
    assert await tokens(cache, reader) == before
