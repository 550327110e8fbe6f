"""Which turns a thread's working buffer has taken: its idempotence guard (issue 29).

A buffer is appended once per turn, and a redelivered or replayed turn must change nothing.
Until stop 48 the buffer kept the ids of its last 1,000 turns and refused those: a
long-running thread's buffer then carried 1,000 ids, read back and rewritten by every batch,
and a redelivery of more than 1,000 turns of one thread re-appended the older ones, so the
buffer ended with stale lines as its newest.

Now the guard keeps the ids of the last `GUARD_IDS` turns it took, with their times, and a
floor: the latest time among the turns it has let go. A turn is refused when its id is kept,
or when it is stamped at or before the floor. Every turn ever taken is one or the other, so
any redelivery or replay, however long, is refused. The cost: a new turn stamped at or before
a turn taken more than `GUARD_IDS` turns earlier does not enter the buffer (its transcript
and turn row are stored as always). A buffer holds its thread's newest 12 lines, and such a
turn is not among the newest by time.

A buffer written before the floor existed holds ids without times: they count as stamped at
its `lastAccessedAt` (no earlier than any turn it took), so once they are let go, every turn
stamped up to then is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

GUARD_IDS = 64
"""Turn ids a guard keeps (with their times) besides its floor."""


@dataclass(frozen=True, slots=True)
class TurnGuard:
    ids: tuple[str, ...] = ()
    """The newest turns taken, oldest first."""
    ats: tuple[int, ...] = ()
    """Their times (ms), aligned with `ids`."""
    floor: int | None = None
    """The latest time among the turns let go (None: none was)."""

    @classmethod
    def legacy(cls, ids: Sequence[str], at: int) -> TurnGuard:
        """The guard of ids kept without times (an older build's), each counted as stamped
        at `at`."""
        kept = tuple(ids[-GUARD_IDS:])
        return cls(kept, (at,) * len(kept), at if len(ids) > GUARD_IDS else None)

    def take(self, turns: Sequence[tuple[str, int]]) -> tuple[list[int], TurnGuard]:
        """The indices of `turns` ((id, time), in order) the guard admits, as consecutive
        appends would decide, and the guard after taking them."""
        ids, ats, floor = list(self.ids), list(self.ats), self.floor
        held = set(ids)
        taken: list[int] = []
        for i, (turn_id, at) in enumerate(turns):
            if turn_id in held or (floor is not None and at <= floor):
                continue
            taken.append(i)
            ids.append(turn_id)
            ats.append(at)
            held.add(turn_id)
            if len(ids) > GUARD_IDS:
                held.discard(ids.pop(0))
                let_go = ats.pop(0)
                floor = let_go if floor is None else max(floor, let_go)
        return taken, TurnGuard(tuple(ids), tuple(ats), floor)
