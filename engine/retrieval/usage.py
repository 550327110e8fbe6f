"""Access counting, only for what was actually returned, in batches (fixes reference §16.14:
the reference bumped counters on cache hits, on candidates beyond the limit, and on every
read, one write per search).

`note` is called with the memory rows that made it into a packed context; `flush` writes
them with one update per batch. A row noted several times within one flush window counts
once, which also damps the rich-get-richer loop of access-weighted ranking.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engine.ports import MemoryStore

MEMORY_LAYERS = frozenset({"graph", "vectors"})


class AccessRecorder:
    def __init__(self, memory: MemoryStore) -> None:
        self._memory = memory
        self._pending: set[str] = set()
        self._followers: list[Callable[[Sequence[str]], None]] = []

    def follow(self, follower: Callable[[Sequence[str]], None]) -> None:
        """Tell `follower` of each flushed batch's ids once the store took it (the search
        state's `VectorIndex.accessed`: the store marks no change for a count)."""
        self._followers.append(follower)

    def note(self, vector_ids: list[str]) -> None:
        self._pending.update(vector_ids)

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def flush(self, at: int) -> int:
        """Write the pending bumps; returns how many rows were counted."""
        if not self._pending:
            return 0
        ids, self._pending = sorted(self._pending), set()
        counted = await self._memory.bump_access(ids, at)
        for follower in self._followers:
            follower(ids)
        return counted
