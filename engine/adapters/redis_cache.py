"""Redis (or Valkey) query cache with namespace counters. Reads and writes of cached values
are fail-soft: a cache that is down means misses and no-ops, never a failed turn (reference
§8.1). Bumping a namespace is not: it raises, so invalidation is retried.

A counter never takes a value it had before, even after it expired (its TTL) or Redis lost
it: a bump sets it to the bumper's clock in microseconds when that is ahead of the
incremented value (`_BUMP`). A plain INCR restarts at 1 after an expiry, so a tenant idle for
longer than the TTL, then written once, got back the token of an older state, and a search
process that still held that state (the exact index keeps a tenant's rows as long as its
byte budget allows) answered without the new write (issue 28)."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Sequence

from redis.asyncio import Redis
from redis.exceptions import RedisError

from engine.errors import DependencyFailed

log = logging.getLogger(__name__)

_BUMP = """
local value = redis.call('INCR', KEYS[1])
local floor = tonumber(ARGV[1])
if value < floor then
    value = floor
    redis.call('SET', KEYS[1], value)
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return value
"""
"""One counter's bump: incremented, raised to the clock's microseconds, given its TTL (one key
per call, so a cluster can route it)."""


class RedisQueryCache:
    def __init__(self, client: Redis, *, prefix: str = "") -> None:
        """`prefix` namespaces every key, so deployments (databases) can share one Redis."""
        self._redis = client
        self._prefix = f"{prefix}:" if prefix else ""
        self._bump = client.register_script(_BUMP)

    async def token(self, chain: Sequence[str]) -> str | None:
        [token] = await self.tokens([chain])
        return token

    async def tokens(self, chains: Sequence[Sequence[str]]) -> list[str | None]:
        keys = list(dict.fromkeys(key for chain in chains for key in chain))
        try:
            values = await self._redis.mget([self._prefix + key for key in keys])
        except RedisError as exc:
            log.warning("cache token unavailable: %s", exc)
            return [None] * len(chains)
        current = dict(zip(keys, values, strict=True))
        return [
            hashlib.sha256("|".join(_text(current[k]) for k in chain).encode()).hexdigest()[:32]
            for chain in chains
        ]

    async def get(self, key: str) -> bytes | None:
        try:
            value = await self._redis.get(self._prefix + key)
        except RedisError as exc:
            log.warning("cache get failed: %s", exc)
            return None
        return value if isinstance(value, bytes) else None

    async def set(self, key: str, value: bytes, ttl_seconds: int) -> None:
        try:
            await self._redis.set(self._prefix + key, value, ex=max(1, ttl_seconds))
        except RedisError as exc:
            log.warning("cache set failed: %s", exc)

    async def bump(self, chain: Sequence[str], ttl_seconds: int) -> int:
        floor, ttl = time.time_ns() // 1000, max(1, ttl_seconds)
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                for key in chain:
                    await self._bump(keys=[self._prefix + key], args=[floor, ttl], client=pipe)
                await pipe.execute()
        except RedisError as exc:
            # not fail-soft: a lost bump would serve stale answers, so the invalidation
            # consumer must retry (and dead-letter after its retries)
            raise DependencyFailed(f"namespace bump failed: {exc}") from exc
        return len(chain)


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode()
    return "0" if value is None else str(value)
