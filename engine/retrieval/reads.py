"""The search's in-process tier: the text layers' store reads kept in memory under the
namespace token they were read at.

A write to a scope bumps its namespace chain (`engine.scoping.namespace_chain`), which changes
the token, so a read kept under the old token is never used again: the same rule the query
cache and the exact vector index follow. What it saves is the database round trips of
working, scene, patterns and archives when a tenant asks again before its memory changed (a
new question in the same turn, several tools of one agent, a burst of requests), and those
reads compete for the 2 cores with the query embedding on a small machine. Concurrent
requests that miss the same read share one load.

Bounded twice: at most `max_entries` reads (least recently used first out), each for at most
`ttl_seconds`, the query cache's TTL, so a write whose invalidation was lost is not served
longer than the query cache would serve it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, TypeVar

from cachetools import TTLCache

T = TypeVar("T")

DEFAULT_MAX_READS = 512


class ReadMemo:
    def __init__(
        self,
        *,
        ttl_seconds: float,
        max_entries: int = DEFAULT_MAX_READS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self._ttl = ttl_seconds
        # least recently used first out, and each entry gone `ttl_seconds` after it was kept
        self._entries: TTLCache[Hashable, asyncio.Future[Any]] = TTLCache(
            maxsize=max_entries, ttl=max(ttl_seconds, 1e-9), timer=clock
        )
        self.loads = 0
        """Reads that went to the store (observability and tests)."""

    async def read(self, key: Hashable, token: str | None, load: Callable[[], Awaitable[T]]) -> T:
        """`load()`'s result, kept under (`key`, `token`). Without a token (the cache
        counters are unavailable) nothing is kept. A failed load is not kept."""
        if token is None or self._ttl <= 0:
            self.loads += 1
            return await load()
        full = (key, token)
        held = self._entries.get(full)
        if held is not None:
            result: T = await asyncio.shield(held)
            return result
        self.loads += 1
        future: asyncio.Future[T] = asyncio.ensure_future(load())
        future.add_done_callback(error_seen)
        self._entries[full] = future
        try:
            return await asyncio.shield(future)
        except BaseException:
            if self._entries.get(full) is future:
                del self._entries[full]
            raise


def error_seen(future: asyncio.Future[Any]) -> None:
    """A done-callback for a future that may end awaited by no one (a load whose first
    caller was cancelled, a catch-up whose search reports its error): marks its error seen,
    so asyncio does not log it as never retrieved."""
    if not future.cancelled():
        future.exception()
