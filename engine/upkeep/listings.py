"""Listings of a tenant's items: the newest facts (now or as of a time) and, for looking at
what a memory holds, the newest rows of any source with replaced facts included."""

from __future__ import annotations

from engine.errors import InputRejected
from engine.records import MemoryRow
from engine.scoping import TenantFilter
from engine.upkeep.items import ItemStore, exact


async def newest_facts(
    store: ItemStore, where: TenantFilter, limit: int, as_of: int | None = None
) -> list[MemoryRow]:
    """The tenant's `limit` newest active facts, newest first (the reference's listing also
    returned deleted and superseded ones: a deleted memory must not come back); with `as_of`
    (ms), the facts that were true then, one replaced since included."""
    if not where.agent_wallet.strip():
        raise InputRejected("agentWallet is required")
    if limit < 1:
        raise InputRejected("limit must be at least 1")
    return await store.newest(exact(where), "fact", limit, as_of)


async def recent_items(
    store: ItemStore, where: TenantFilter, *, source: str | None, limit: int
) -> list[MemoryRow]:
    """The tenant's `limit` newest rows of `source` (None: of every source), newest first,
    for looking at what a memory holds: replaced facts included (their `invalid_at` and
    `superseded_by` say when and by what), deleted rows never. Exact tenant: a filter
    without a user reads only the agent's user-less rows."""
    if not where.agent_wallet.strip():
        raise InputRejected("agentWallet is required")
    if limit < 1:
        raise InputRejected("limit must be at least 1")
    return await store.newest(exact(where), source, limit, include_superseded=True)
