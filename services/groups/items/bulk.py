"""The items group's `read` and `write` (issue 30): many rows of one tenant at once, for an
adapter that sends thousands of small item operations (a LangGraph store under load).

`read` answers the visible rows among the request's ids, by id, until the reply would pass
`PAGE_BYTES`; `next_after` then names the first id left out, to ask for again. A `write`
with ids answers them the same way once its writes are applied (a read saved). `write`
applies the request's writes with one read, one embedding call and one bulk write
(`engine.upkeep.item_writes`); the caller (`services.groups.items`) announces the change
once per written scope and bumps its cache namespace before replying, as for one item.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from typing import Any

from faststream.kafka.annotations import KafkaMessage

from engine.history import Ledger
from engine.records import Cause, MemoryRow
from engine.scoping import TenantFilter, scope_fields, tenant_filter
from engine.upkeep.derived import forget_derived
from engine.upkeep.item_writes import Write, write_items
from schemas.requests import ItemReply, ItemRequest
from services.groups.items.scan import page_of
from services.runtime import Runtime


async def read(
    rt: Runtime, request: ItemRequest, public: Callable[[MemoryRow], dict[str, Any]]
) -> ItemReply:
    """The visible rows among `request.ids` (see the module docstring); none without ids
    (a `write` that reads nothing back)."""
    if not request.ids:
        return ItemReply()
    where = tenant_filter(request.scope, durable=True)
    rows = [r for r in await rt.items.read_rows(where, request.ids or []) if r.status != "deleted"]
    page = page_of(rows, public)
    return ItemReply(
        items=page, next_after=rows[len(page)].vector_id if rows[len(page) :] else None
    )


MAX_RECORD_AGE_MS = 60_000
"""How far back a write request's record time is taken as the time of its writes."""


def event_time(timestamp: int | None, now: int) -> int:
    """The time a `write` request's writes are applied at (ms since epoch): its record's
    time, when the producer set one (the request's event time, which a writer that answers
    reads before the group applies them knows: a new row's creation time), kept within
    `MAX_RECORD_AGE_MS` before `now` and never after it; else `now`."""
    if timestamp is None or timestamp <= 0:
        return now
    return max(now - MAX_RECORD_AGE_MS, min(timestamp, now))


def writer(message: KafkaMessage) -> Callable[..., Awaitable[list[MemoryRow]]]:
    """`write` at the time of the request's record (`event_time`)."""
    stamp = getattr(message.raw_message, "timestamp", None)
    return functools.partial(write, at=event_time(stamp, int(time.time() * 1000)))


async def write(
    rt: Runtime, request: ItemRequest, cause: Cause, at: int | None = None
) -> list[MemoryRow]:
    """Apply `request.writes` at `at` (ms since epoch; else now); the rows they changed (as
    found before, new ones as created). What the graph read from a deleted row goes with it
    (`engine.upkeep.derived`)."""
    writes = [Write(w.id, w.op, w.content, w.metadata, w.type) for w in request.writes or []]
    where, at, ledger = (
        tenant_filter(request.scope, durable=True),
        int(time.time() * 1000) if at is None else at,
        Ledger(rt.history, cause),
    )
    rows = await write_items(
        rt.items, rt.embedder, where, scope_fields(request.scope), writes, at=at, ledger=ledger
    )
    deleted = {w.vector_id for w in writes if w.kind == "delete"}
    await forget_read_from(
        rt, where, [r.vector_id for r in rows if r.vector_id in deleted], at, ledger
    )
    return rows


async def forget_read_from(
    rt: Runtime, where: TenantFilter, item_ids: list[str], at: int, ledger: Ledger
) -> None:
    """What the graph read from deleted items goes with them (`engine.upkeep.derived`)."""
    graph = rt.stores.graph
    if graph is not None and item_ids:
        await forget_derived(
            graph, rt.stores.relations, rt.embedder, where, item_ids, at=at, ledger=ledger
        )
