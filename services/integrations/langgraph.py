"""LangGraph long-term memory on mnemostream: `MnemoStore`, a `langgraph.store.base.BaseStore`.

    async with MemoryClient(bootstrap) as client:
        graph = builder.compile(store=MnemoStore(client, agent="0xAgent", user="alice"))

**Scope.** A store is one tenant's: the agent and the user it is built with (no user: the
agent's user-less memory). Every request names that scope, which the groups match exactly,
so nothing a graph passes can reach another tenant: a namespace is a path *inside* the
tenant and never names an agent or a user, whatever its labels say.

**Items** (`store_records`). An item is one fact of the tenant (`metadata.type`
"langgraph"), so pre_turn recalls it too. Its row id derives from the namespace and the
key; `metadata.langgraph` holds them, the value (JSON text, at most 32,000 characters) and
its times, and one text per indexed field (`index={"fields": [...]}`, LangGraph paths; `"$"`
is the whole value as JSON; `put(..., index=[...])` names its own), 4,000 characters in
all; the row's content (what pre_turn reads) is those texts, one per line.

* A `put` or `delete` returns once the broker has it, or at once, buffered, while the
  store's last write request is in the items group or just published (`langgraph_writes`):
  every read of the tenant's stores on this client lays the buffer over what the items
  group answers, so the next `get`, `search` or listing reads it exactly; concurrent puts
  and deletes of a key never raise, and the last one acknowledged wins. The items group
  applies them in bulk (one `write` request creates, revives or updates many rows, and
  bumps the cache namespace); a write it did not apply is raised by the store's next call,
  and `aflush`/`flush` waits until all are published and applied (for pre_turn, and
  before the process ends: a buffered write lives in it). `delete` is a soft delete.
* Reads are coalesced (`langgraph_rounds`): the reads waiting on the client's loop run
  together as one *round*: its gets as items `read` requests and its listings from one
  scan, under the buffered writes.
* `search` ranks every live item of the namespace prefix that matches the filter, then
  applies `offset`/`limit` (`langgraph_search`: a scan of the tenant's items, scored by the
  best of each item's per-field vectors); without a query it lists them, newest update first.
  `list_namespaces` reads the same scan.
* TTLs (`ttl` on put, in minutes; `ttl_config` for a default, refresh on read and the
  sweeper): an expired item is gone for every read and is deleted when a read meets it or
  when `sweep_ttl` (`start_ttl_sweeper`) runs.

Every call runs on the client's event loop (`client.loop`, `loops.on_home_loop`): an
asynchronous call from another loop is handed to it, and the synchronous methods wait for it
from any other thread (a graph run with `invoke` in a worker thread); on that loop itself
they raise, as LangGraph's own asynchronous stores do.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cachetools import LRUCache
from langgraph.store.base import (
    BaseStore,
    IndexConfig,
    Op,
    PutOp,
    Result,
    TTLConfig,
    ensure_embeddings,
)
from pydantic import ValidationError

from engine.ingest.remember import fact_hash
from schemas.scope import Scope
from services.integrations.langgraph_ops import check_op
from services.integrations.langgraph_rounds import Rounds
from services.integrations.langgraph_search import EmbedCache, Reader
from services.integrations.langgraph_writes import Writes
from services.integrations.loops import on_home_loop
from services.integrations.store_records import (
    MAX_VALUE_CHARS,
    RECORD_KEY,
    TTL_KEY,
    Record,
    anchor,
    now_ms,
)
from services.sdk.client import MemoryClient
from services.sdk.transport import RequestFailed

__all__ = ["MnemoStore"]

ID_CACHE = 10_000
"""Row ids a store keeps (two hashes each), for the keys it meets over and over."""
SWEEP_MINUTES = 5.0
"""Minutes between two sweeps of `start_ttl_sweeper` when `ttl_config` names none."""


@dataclass
class Relay:
    """The batches of one other event loop than the client's, handed to the client's loop
    together: everything that waited on this loop while the previous hand-over ran goes in
    one `run_coroutine_threadsafe`, not one each (60,000 hand-overs between two threads cost
    more than the requests they carry)."""

    rounds: Rounds
    hand_over: Callable[[Callable[[], Any]], Any]
    """`loops.on_home_loop` bound to the client: runs a coroutine maker on its loop."""
    _waiting: list[tuple[list[Op], asyncio.Future[list[Result]]]] = field(default_factory=list)
    _drainer: asyncio.Task[None] | None = None

    async def run(self, ops: list[Op]) -> list[Result]:
        done: asyncio.Future[list[Result]] = asyncio.get_running_loop().create_future()
        self._waiting.append((ops, done))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.get_running_loop().create_task(self._drain())
        return await done

    async def _drain(self) -> None:
        while self._waiting:
            taken, self._waiting = self._waiting, []
            batches = [ops for ops, _ in taken]
            try:
                results = await self.hand_over(functools.partial(self.rounds.run_many, batches))
            except Exception as exc:  # noqa: BLE001 - handed to every caller waiting
                results = [exc] * len(taken)
            for (_, done), result in zip(taken, results, strict=True):
                if done.done():
                    continue
                if isinstance(result, BaseException):
                    done.set_exception(result)
                else:
                    done.set_result(result)


class MnemoStore(BaseStore):
    """A LangGraph store holding one tenant's items as mnemostream facts (see the module
    docstring). `index`: LangGraph's index configuration; its `fields` are the paths
    embedded (default `index_fields`, else `["$"]`) and its `embed`, when given, embeds
    queries and items here instead of the deployment's embedder. `ttl`: LangGraph's TTL
    configuration (`default_ttl`, `refresh_on_read`, `sweep_interval_minutes`). `timeout`:
    seconds each request waits for its reply (the client's default when None);
    `write_timeout`: seconds a write request (many puts and deletes) waits for its reply."""

    supports_ttl: bool = True

    def __init__(
        self,
        client: MemoryClient,
        *,
        agent: str,
        user: str | None = None,
        index: IndexConfig | None = None,
        index_fields: Sequence[str] | None = None,
        ttl: TTLConfig | None = None,
        timeout: float | None = None,
        write_timeout: float = 30.0,
    ) -> None:
        self._client = client
        self.scope = Scope.parse({"agentWallet": agent, "userAddress": user})
        fields = (index or {}).get("fields") or index_fields or ("$",)
        if not fields:
            raise ValueError("index fields must name at least one path")
        self.index_fields = tuple(fields)
        config: dict[str, Any] = {**(index or {}), "fields": list(self.index_fields)}
        self.index_config: IndexConfig = config  # type: ignore[assignment]
        embed = (index or {}).get("embed")
        self.ttl_config = ttl
        self._timeout = timeout
        self._write_timeout = write_timeout
        self._reader = Reader(
            client,
            self.scope,
            self._own,
            now_ms,
            timeout,
            None if embed is None else EmbedCache(ensure_embeddings(embed)),
        )
        self._sweeper: asyncio.Task[None] | None = None
        self._ids: LRUCache[tuple[tuple[str, ...], str], str] = LRUCache(maxsize=ID_CACHE)
        self._relays: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Relay] = (
            weakref.WeakKeyDictionary()
        )  # one per other event loop that calls this store
        self._rounds = Rounds(
            client,
            self.scope,
            self._reader,
            self._own,
            self.item_id,
            self.index_fields,
            timeout,
            write_timeout,
        )

    # --- the two entry points ------------------------------------------------------------

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run `ops` in order, on the client's loop; one result per op (None for puts and
        deletes)."""
        todo = list(ops)
        for op in todo:
            check_op(op)
            if isinstance(op, PutOp) and op.value is not None:
                size = len(json.dumps(dict(op.value), ensure_ascii=False, separators=(",", ":")))
                if size > MAX_VALUE_CHARS:
                    raise ValueError(
                        f"the value is {size} characters as JSON; an item holds at most "
                        f"{MAX_VALUE_CHARS}"
                    )
        here = asyncio.get_running_loop()
        if self._client.loop in (None, here):
            return await self._rounds.run(todo)
        relay = self._relays.get(here)
        if relay is None:
            relay = self._relays[here] = Relay(
                self._rounds, lambda make: on_home_loop(self._client, make)
            )
        return await relay.run(todo)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """`abatch` on the client's event loop, waited for from this thread."""
        loop = self._client.loop
        if loop is None or loop.is_closed() or not loop.is_running():
            raise RuntimeError(
                "MnemoStore's client is not running on a loop this thread can wait for: "
                "start the client (async with MemoryClient(...)) on a loop that keeps running"
            )
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            raise asyncio.InvalidStateError(
                "Synchronous calls to MnemoStore on its own event loop would deadlock: use "
                "the asynchronous methods (aget, aput, asearch, …) or graph.ainvoke"
            )
        return asyncio.run_coroutine_threadsafe(self.abatch(list(ops)), loop).result()

    async def aflush(self) -> None:
        """Wait until the items group has applied every put and delete this store
        acknowledged (`langgraph_writes`): what a reader outside the store needs, such as
        pre_turn (`client.context`). Raises the failure of one that was not applied."""
        await on_home_loop(self._client, self._rounds.lane.flush)

    def flush(self) -> None:
        """`aflush`, waited for from this thread (not on the client's loop)."""
        loop = self._client.loop
        if loop is None or not loop.is_running():
            raise RuntimeError("MnemoStore's client is not running on a loop")
        asyncio.run_coroutine_threadsafe(self.aflush(), loop).result()

    # --- rows ------------------------------------------------------------------------------

    def item_id(self, namespace: tuple[str, ...], key: str) -> str:
        """The memory row id of item `key` of `namespace` in this store's tenant: the fact
        id of an anchor text naming both (`engine.ingest.remember`), remembered per store."""
        found: str | None = self._ids.get((namespace, key))
        if found is None:
            scope = self.scope
            digest = fact_hash(
                scope.agent_wallet,
                scope.user_address,
                anchor(namespace, key),
                scope.mode,
                scope.hai_id,
            )
            found = self._ids[(namespace, key)] = "fact_" + digest
        return found

    def _own(self, row: Mapping[str, Any]) -> Record | None:
        """The item a row holds (its TTL included), or None when it holds none (another fact
        of the tenant) or is not this tenant's, deleted or superseded."""
        if row.get("agentWallet") != self.scope.agent_wallet:
            return None
        if row.get("userAddress") != self.scope.user_address:
            return None
        if row.get("status") in ("deleted", "superseded"):
            return None
        metadata = row.get("metadata")
        if not isinstance(metadata, Mapping):
            return None
        record, ttl = metadata.get(RECORD_KEY), metadata.get(TTL_KEY)
        if not isinstance(record, Mapping):
            return None
        # the row's creation time: a put keeps it, a put after a delete renews it
        created = row.get("createdAt", record.get("createdAt"))
        try:
            return Record.model_validate(
                {**record, **(ttl if isinstance(ttl, Mapping) else {}), "createdAt": created}
            )
        except ValidationError:
            return None

    # --- TTL -------------------------------------------------------------------------------

    async def sweep_ttl(self) -> int:
        """Delete the tenant's expired items; how many were deleted."""

        async def sweep() -> int:
            expired = await self._reader.expired()
            writes: Writes = {}
            for record in expired:
                item_id = self.item_id(tuple(record.namespace), record.key)
                writes[item_id] = {"id": item_id, "op": "delete"}
            await self._rounds.lane.send(writes, self._write_timeout)
            return len(expired)

        return await on_home_loop(self._client, sweep)

    async def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> None:
        """Sweep every `sweep_interval_minutes` (else `ttl_config`'s, else `SWEEP_MINUTES`)
        on the client's loop until `stop_ttl_sweeper`; a failed sweep is tried again at the
        next interval."""
        minutes = sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes")
        pause = float(minutes or SWEEP_MINUTES) * 60

        async def sweeping() -> None:
            while True:
                with contextlib.suppress(RequestFailed, TimeoutError):
                    await self.sweep_ttl()
                await asyncio.sleep(pause)

        async def start() -> None:
            if self._sweeper is None or self._sweeper.done():
                self._sweeper = asyncio.get_running_loop().create_task(sweeping())

        await on_home_loop(self._client, start)

    async def stop_ttl_sweeper(self) -> None:
        """Stop the sweeper (no-op when none runs)."""

        async def stop() -> None:
            task, self._sweeper = self._sweeper, None
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

        await on_home_loop(self._client, stop)
