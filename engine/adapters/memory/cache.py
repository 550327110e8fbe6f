"""In-memory `QueryCache` (unit tests, the contract suite's twin)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence


class InMemoryQueryCache:
    """Counters and values in dicts; TTLs are not enforced (tests run in milliseconds)."""

    def __init__(self) -> None:
        self.values: dict[str, bytes] = {}
        self.counters: dict[str, int] = {}

    async def token(self, chain: Sequence[str]) -> str | None:
        joined = "|".join(str(self.counters.get(key, 0)) for key in chain)
        return hashlib.sha256(joined.encode()).hexdigest()[:32]

    async def tokens(self, chains: Sequence[Sequence[str]]) -> list[str | None]:
        return [await self.token(chain) for chain in chains]

    async def get(self, key: str) -> bytes | None:
        return self.values.get(key)

    async def set(self, key: str, value: bytes, ttl_seconds: int) -> None:
        self.values[key] = value

    async def bump(self, chain: Sequence[str], ttl_seconds: int) -> int:
        for key in chain:
            self.counters[key] = self.counters.get(key, 0) + 1
        return len(chain)
