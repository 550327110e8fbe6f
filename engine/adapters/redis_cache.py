"""Redis (or Valkey) query cache with namespace counters. Reads and writes of cached values
are fail-soft: a cache that is down means misses and no-ops, never a failed turn (reference
§8.1). Bumping a namespace is not: it raises, so invalidation is retried."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence

from redis.asyncio import Redis
from redis.exceptions import RedisError

from engine.errors import DependencyFailed

log = logging.getLogger(__name__)


class RedisQueryCache:
    def __init__(self, client: Redis, *, prefix: str = "") -> None:
        """`prefix` namespaces every key, so deployments (databases) can share one Redis."""
        self._redis = client
        self._prefix = f"{prefix}:" if prefix else ""

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
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                for key in chain:
                    pipe.incr(self._prefix + key)
                    pipe.expire(self._prefix + key, max(1, ttl_seconds))
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
