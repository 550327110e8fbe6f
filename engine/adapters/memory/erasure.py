"""In-memory `UserEraser` (unit tests, the contract suite's twin of
`engine.adapters.mongo.erasure`): each in-memory store drops its own records of the user
(`drop_user`), and the eraser counts them by kind."""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Protocol, TypeVar

from engine.records import ScopeFields

T = TypeVar("T")


def drop_user(
    rows: MutableMapping[str, T], scope: Callable[[T], ScopeFields], agent: str, user: str
) -> list[str]:
    """Remove the rows of exactly `user` of `agent` from `rows`; their keys."""
    keys = [
        key
        for key, row in rows.items()
        if scope(row).agent_wallet == agent and scope(row).user_address == user
    ]
    for key in keys:
        del rows[key]
    return keys


class Droppable(Protocol):
    def drop_user(self, agent_wallet: str, user_address: str) -> int:
        """Remove this store's records of the user (the item history: silence them); how
        many."""
        ...


class InMemoryUserEraser:
    """Erases from the given stores, each counted under its kind; `also` are erased without
    being counted (a second view of records a counted store holds)."""

    def __init__(self, kinds: dict[str, Droppable], also: tuple[Droppable, ...] = ()) -> None:
        self._kinds = kinds
        self._also = also

    async def erase_user(self, agent_wallet: str, user_address: str) -> dict[str, int]:
        for store in self._also:
            store.drop_user(agent_wallet, user_address)
        return {
            kind: store.drop_user(agent_wallet, user_address) for kind, store in self._kinds.items()
        }
