"""`ItemHistory` in memory, for unit tests and the contract suite (the MongoDB one is
`engine.adapters.mongo.history`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from engine.history import SPOKEN_DETAILS
from engine.records import ItemChange
from engine.scoping import TenantFilter


class InMemoryItemHistory:
    """The changes in the order they were recorded, by change id."""

    def __init__(self) -> None:
        self._changes: dict[str, tuple[int, ItemChange]] = {}

    def all(self) -> list[ItemChange]:
        """Every change kept, in the order recorded (for tests)."""
        return [c for _, c in sorted(self._changes.values(), key=lambda pair: pair[0])]

    async def record(self, changes: Sequence[ItemChange]) -> None:
        for item in changes:
            if item.change_id not in self._changes:
                self._changes[item.change_id] = (len(self._changes), item)

    async def of_item(self, where: TenantFilter, item_id: str, limit: int) -> list[ItemChange]:
        exact = where.exact()
        found = [
            (seq, c)
            for seq, c in self._changes.values()
            if c.item_id == item_id and exact.admits(c.scope)
        ]
        found.sort(key=lambda pair: (pair[1].at, pair[0]))
        return [c for _, c in found[-limit:]] if limit > 0 else []

    async def forget(self, where: TenantFilter, item_ids: Sequence[str]) -> int:
        exact, wanted = where.exact(), set(item_ids)
        return self._silence(lambda c: c.item_id in wanted and exact.admits(c.scope))

    def drop_user(self, agent_wallet: str, user_address: str) -> int:
        """An erasure's part here (`InMemoryUserEraser`): the user's changes keep what
        happened and lose what they said; how many lost their texts now."""
        return self._silence(
            lambda c: (
                c.scope.agent_wallet == agent_wallet
                and c.scope.user_address == user_address
                and not c.details.get("forgotten")
            )
        )

    def _silence(self, chosen: Callable[[ItemChange], bool]) -> int:
        touched = 0
        for change_id, (seq, c) in list(self._changes.items()):
            if chosen(c):
                kept = {k: v for k, v in c.details.items() if k not in SPOKEN_DETAILS}
                quiet = replace(
                    c, old_content=None, new_content=None, details={**kept, "forgotten": True}
                )
                self._changes[change_id] = (seq, quiet)
                touched += 1
        return touched
