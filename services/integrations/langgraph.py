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

* `put` creates a missing row with `remember` and reads it back until the facts group
  stored it, then sets its text and value with an item `update`: the next `get` and
  `search` see it (the items group bumps the cache namespace before it replies). A `delete`
  of the key that wins the race between the read and the update makes the `put` start again
  (at most `PUT_ATTEMPTS` times), so concurrent puts and deletes of a key never raise.
  `delete` is a soft item delete; `get` an item `get`.
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
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
)
from pydantic import ValidationError

from engine.ingest.remember import fact_hash
from schemas.scope import Scope
from services.integrations.langgraph_ops import check_op, item_text, item_texts
from services.integrations.langgraph_search import EmbedCache, Reader, search_item
from services.integrations.loops import on_home_loop
from services.integrations.store_records import (
    FACT_TYPE,
    MAX_VALUE_CHARS,
    RECORD_KEY,
    TTL_KEY,
    Record,
    anchor,
    moment,
    now_ms,
    prefix_tag,
    value_of,
)
from services.integrations.visibility import until_visible
from services.sdk.client import MemoryClient
from services.sdk.transport import RequestFailed

__all__ = ["MnemoStore"]

PUT_ATTEMPTS = 5
"""Times a `put` starts again when a concurrent `delete` of its key wins the race."""
MINUTE_MS = 60_000
CONCURRENT_BATCHES = 32
"""Batches of one store running at once; more wait their turn, so a burst of thousands of
calls queues here instead of flooding the groups until their requests time out."""
SWEEP_MINUTES = 5.0
"""Minutes between two sweeps of `start_ttl_sweeper` when `ttl_config` names none."""


class MnemoStore(BaseStore):
    """A LangGraph store holding one tenant's items as mnemostream facts (see the module
    docstring). `index`: LangGraph's index configuration; its `fields` are the paths
    embedded (default `index_fields`, else `["$"]`) and its `embed`, when given, embeds
    queries and items here instead of the deployment's embedder. `ttl`: LangGraph's TTL
    configuration (`default_ttl`, `refresh_on_read`, `sweep_interval_minutes`). `timeout`:
    seconds each request waits for its reply (the client's default when None);
    `write_timeout`: seconds a `put` waits for a new item to be stored."""

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
        self._gate = asyncio.Semaphore(CONCURRENT_BATCHES)  # used on the client's loop only

    # --- the two entry points ------------------------------------------------------------

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run `ops` in order, on the client's loop; one result per op (None for puts and
        deletes)."""
        todo = list(ops)
        for op in todo:
            check_op(op)
        return await on_home_loop(self._client, lambda: self._all(todo))

    async def _all(self, ops: Sequence[Op]) -> list[Result]:
        async with self._gate:
            return [await self._run(op) for op in ops]

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

    async def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return await self._get(op.namespace, op.key, op.refresh_ttl)
        if isinstance(op, PutOp):
            if op.value is None:
                await self._delete(op.namespace, op.key)
            else:
                await self._put(op.namespace, op.key, op.value, op.index, op.ttl)
            return None
        if isinstance(op, SearchOp):
            found = await self._reader.search(op)
            if op.refresh_ttl:
                await self._refresh([record for record, _ in found])
            return [search_item(record, score) for record, score in found]
        if isinstance(op, ListNamespacesOp):
            return await self._reader.namespaces(op)
        raise ValueError(f"unknown operation {type(op).__name__}")

    # --- rows ------------------------------------------------------------------------------

    def item_id(self, namespace: tuple[str, ...], key: str) -> str:
        """The memory row id of item `key` of `namespace` in this store's tenant: the id the
        facts group gives the remembered anchor (`engine.ingest.remember`)."""
        scope = self.scope
        text = anchor(namespace, key)
        return "fact_" + fact_hash(
            scope.agent_wallet, scope.user_address, text, scope.mode, scope.hai_id
        )

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
        try:
            return Record.model_validate({**record, **(ttl if isinstance(ttl, Mapping) else {})})
        except ValidationError:
            return None

    async def _row(self, item_id: str) -> dict[str, Any] | None:
        """The row (any status but deleted), or None when it is missing."""
        reply = await self._client.item("get", item_id, self.scope, timeout=self._timeout)
        if reply.not_found:
            return None
        if reply.error:
            raise RequestFailed(reply.error)
        return reply.items[0] if reply.items else None

    # --- operations ------------------------------------------------------------------------

    async def _get(self, namespace: tuple[str, ...], key: str, refresh: bool) -> Item | None:
        row = await self._row(self.item_id(namespace, key))
        record = None if row is None else self._own(row)
        if record is None or tuple(record.namespace) != namespace or record.key != key:
            return None
        if record.expired(now_ms()):
            await self._delete(namespace, key)  # expiry swept on read
            return None
        if refresh:
            await self._refresh([record])
        return Item(
            value=value_of(record),
            key=record.key,
            namespace=tuple(record.namespace),
            created_at=moment(record.createdAt),
            updated_at=moment(record.updatedAt),
        )

    async def _put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None,
        ttl: float | None,
    ) -> None:
        encoded = json.dumps(dict(value), ensure_ascii=False, separators=(",", ":"))
        if len(encoded) > MAX_VALUE_CHARS:
            raise ValueError(
                f"the value is {len(encoded)} characters as JSON; an item holds at most "
                f"{MAX_VALUE_CHARS}"
            )
        item_id = self.item_id(namespace, key)
        fields = self.index_fields if index is None or index is False else tuple(index)
        texts = [] if index is False else item_texts(value, fields)
        for _ in range(PUT_ATTEMPTS):
            now = now_ms()
            row = await self._row(item_id)
            earlier = None if row is None else self._own(row)
            record = {
                "namespace": list(namespace),
                "key": key,
                "value": encoded,
                "indexed": index is not False,
                "prefixes": [prefix_tag(namespace[:n]) for n in range(len(namespace) + 1)],
                "createdAt": earlier.createdAt if earlier is not None else now,
                "updatedAt": now,
                "texts": texts,
            }
            expiry = {
                "expiresAt": None if ttl is None else now + int(ttl * MINUTE_MS),
                "ttlMinutes": ttl,
            }
            if row is None:  # new, or deleted: remembering the anchor again revives it
                await self._create(item_id, namespace, key, record)
            reply = await self._client.item(
                "update",
                item_id,
                self.scope,
                content=item_text(value, texts),
                metadata={RECORD_KEY: record, TTL_KEY: expiry},
                status="active",
                timeout=self._timeout,
            )
            if not reply.not_found:
                if reply.error:
                    raise RequestFailed(reply.error)
                return
            # a delete of the same key came between the read and the update: put again
        raise RequestFailed(f"LangGraph item {key!r} of {namespace} kept being deleted")

    async def _create(
        self, item_id: str, namespace: tuple[str, ...], key: str, record: dict[str, Any]
    ) -> None:
        """Remember the item's anchor fact and wait until the facts group stored it."""
        await self._client.remember(
            {
                **self.scope.wire(),
                "content": anchor(namespace, key),
                "type": FACT_TYPE,
                "metadata": {RECORD_KEY: record},
            }
        )
        await until_visible(
            lambda: self._row(item_id),
            timeout=self._write_timeout,
            what=f"LangGraph item {key!r} of {namespace}",
        )

    async def _delete(self, namespace: tuple[str, ...], key: str) -> None:
        reply = await self._client.item(
            "delete", self.item_id(namespace, key), self.scope, timeout=self._timeout
        )
        if reply.error and not reply.not_found:
            raise RequestFailed(reply.error)

    # --- TTL -------------------------------------------------------------------------------

    async def _refresh(self, records: Sequence[Record]) -> None:
        """Start the TTL of these items again (those that have one): only their TTL key is
        written, so a put that came meanwhile keeps its value."""
        for record in records:
            if record.ttlMinutes is None:
                continue
            expiry = {
                "expiresAt": now_ms() + int(record.ttlMinutes * MINUTE_MS),
                "ttlMinutes": record.ttlMinutes,
            }
            item_id = self.item_id(tuple(record.namespace), record.key)
            # a delete that won the race leaves nothing to refresh: not_found is fine
            await self._client.item(
                "update", item_id, self.scope, metadata={TTL_KEY: expiry}, timeout=self._timeout
            )

    async def sweep_ttl(self) -> int:
        """Delete the tenant's expired items; how many were deleted."""

        async def sweep() -> int:
            expired = await self._reader.expired()
            for record in expired:
                await self._delete(tuple(record.namespace), record.key)
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
