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
its times. Its embedded content is the text at `index_fields` (LangGraph paths; `"$"` is the
whole value as JSON), cut at 4,000 characters; `put(..., index=[...])` names its own paths.

* `put` creates a missing row with `remember` and reads it back until the facts group
  stored it, then sets its text and value with an item `update`: the next `get` and
  `search` see it (the items group bumps the cache namespace before it replies). A `delete`
  of the key that wins the race between the read and the update makes the `put` start again
  (at most `PUT_ATTEMPTS` times), so concurrent puts and deletes of a key never raise.
  `delete` is a soft item delete; `get` an item `get`.
* `search` with a query is a vectors-layer search narrowed server-side to the namespace
  prefix and to indexed items, best first (`offset + limit` at most 20); without one it lists
  the items, newest update first. `filter` applies LangGraph's operators to the values.
* Listings (a search without a query, `list_namespaces`) read the tenant's newest 200 facts,
  the most one item listing answers. TTLs are not supported.

The synchronous methods run the asynchronous ones on the client's event loop and wait, so
they work from any other thread (a graph run with `invoke` in a worker thread); on that loop
itself they raise, as LangGraph's own asynchronous stores do.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from pydantic import ValidationError

from engine.ingest.remember import fact_hash
from schemas.scope import Scope
from services.integrations.langgraph_ops import check_op, item_text
from services.integrations.store_records import (
    FACT_TYPE,
    LISTING_ROWS,
    MAX_QUERY_HITS,
    MAX_VALUE_CHARS,
    RECORD_KEY,
    Record,
    anchor,
    matches,
    moment,
    namespace_matches,
    now_ms,
    prefix_tag,
)
from services.integrations.visibility import until_visible
from services.sdk.client import MemoryClient
from services.sdk.transport import RequestFailed

__all__ = ["MnemoStore"]

log = logging.getLogger(__name__)

PUT_ATTEMPTS = 5
"""Times a `put` starts again when a concurrent `delete` of its key wins the race."""


class MnemoStore(BaseStore):
    """A LangGraph store holding one tenant's items as mnemostream facts (see the module
    docstring). `timeout`: seconds each request waits for its reply (the client's default
    when None); `write_timeout`: seconds a `put` waits for a new item to be stored."""

    supports_ttl: bool = False

    def __init__(
        self,
        client: MemoryClient,
        *,
        agent: str,
        user: str | None = None,
        index_fields: Sequence[str] = ("$",),
        timeout: float | None = None,
        write_timeout: float = 30.0,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self._client = client
        self.scope = Scope.parse({"agentWallet": agent, "userAddress": user})
        if not index_fields:
            raise ValueError("index_fields must name at least one path")
        self.index_fields = tuple(index_fields)
        self._timeout = timeout
        self._write_timeout = write_timeout
        if loop is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
        self._loop = loop

    # --- the two entry points ------------------------------------------------------------

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run `ops` in order; one result per op (None for puts and deletes)."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        todo = list(ops)
        for op in todo:
            check_op(op)
        return [await self._run(op) for op in todo]

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """`abatch` on the client's event loop, waited for from this thread."""
        loop = self._loop
        if loop is None:
            raise RuntimeError(
                "MnemoStore does not know its event loop yet: build it inside the client's "
                "loop, pass loop=..., or make one asynchronous call first"
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
            return await self._get(op.namespace, op.key)
        if isinstance(op, PutOp):
            if op.value is None:
                await self._delete(op.namespace, op.key)
            else:
                await self._put(op.namespace, op.key, op.value, op.index)
            return None
        if isinstance(op, SearchOp):
            if op.query:
                return await self._query(op)
            return await self._list(op)
        if isinstance(op, ListNamespacesOp):
            return await self._namespaces(op)
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
        """The item a row holds, or None when it holds none (another fact of the tenant) or
        is not this tenant's, deleted or superseded."""
        if row.get("agentWallet") != self.scope.agent_wallet:
            return None
        if row.get("userAddress") != self.scope.user_address:
            return None
        if row.get("status") in ("deleted", "superseded"):
            return None
        metadata = row.get("metadata")
        record = metadata.get(RECORD_KEY) if isinstance(metadata, Mapping) else None
        if not isinstance(record, Mapping):
            return None
        try:
            return Record.model_validate(record)
        except ValidationError:
            return None

    @staticmethod
    def _value(record: Record) -> dict[str, Any]:
        value = json.loads(record.value)
        return value if isinstance(value, dict) else {}

    def _item(self, record: Record) -> Item:
        return Item(
            value=self._value(record),
            key=record.key,
            namespace=tuple(record.namespace),
            created_at=moment(record.createdAt),
            updated_at=moment(record.updatedAt),
        )

    async def _row(self, item_id: str) -> dict[str, Any] | None:
        """The row (any status but deleted), or None when it is missing."""
        reply = await self._client.item("get", item_id, self.scope, timeout=self._timeout)
        if reply.not_found:
            return None
        if reply.error:
            raise RequestFailed(reply.error)
        return reply.items[0] if reply.items else None

    # --- operations ------------------------------------------------------------------------

    async def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        row = await self._row(self.item_id(namespace, key))
        record = None if row is None else self._own(row)
        if record is None or tuple(record.namespace) != namespace or record.key != key:
            return None
        return self._item(record)

    async def _put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None,
    ) -> None:
        encoded = json.dumps(dict(value), ensure_ascii=False, separators=(",", ":"))
        if len(encoded) > MAX_VALUE_CHARS:
            raise ValueError(
                f"the value is {len(encoded)} characters as JSON; an item holds at most "
                f"{MAX_VALUE_CHARS}"
            )
        item_id = self.item_id(namespace, key)
        fields = self.index_fields if index is None or index is False else tuple(index)
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
            }
            if row is None:  # new, or deleted: remembering the anchor again revives it
                await self._create(item_id, namespace, key, record)
            reply = await self._client.item(
                "update",
                item_id,
                self.scope,
                content=item_text(value, fields),
                metadata={RECORD_KEY: record},
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

    async def _listed(self) -> list[Record]:
        """The tenant's items among its newest `LISTING_ROWS` facts, newest update first."""
        reply = await self._client.newest_items(
            self.scope, limit=LISTING_ROWS, timeout=self._timeout
        )
        if reply.error:
            raise RequestFailed(reply.error)
        if len(reply.items) >= LISTING_ROWS:
            log.warning("LangGraph listing read the tenant's newest %d facts only", LISTING_ROWS)
        records = [r for r in (self._own(row) for row in reply.items) if r is not None]
        return sorted(records, key=lambda r: (-r.updatedAt, r.namespace, r.key))

    async def _list(self, op: SearchOp) -> list[SearchItem]:
        n = len(op.namespace_prefix)
        found = [
            r
            for r in await self._listed()
            if tuple(r.namespace[:n]) == op.namespace_prefix and matches(self._value(r), op.filter)
        ]
        return [self._search_item(r, None) for r in found[op.offset : op.offset + op.limit]]

    async def _query(self, op: SearchOp) -> list[SearchItem]:
        assert op.query is not None  # noqa: S101 - the caller checked
        filters = {
            f"metadata.{RECORD_KEY}.prefixes": prefix_tag(op.namespace_prefix),
            f"metadata.{RECORD_KEY}.indexed": True,
        }
        wanted = MAX_QUERY_HITS if op.filter else op.offset + op.limit
        reply = await self._client.search_layers(
            op.query,
            {**self.scope.wire(), "filters": filters},
            layers=["vectors"],
            limit=wanted,
            timeout=self._timeout,
        )
        scores: dict[str, float] = {}
        for hit in reply.layers.get("vectors", []):
            hit_id, score = hit.get("id"), hit.get("score")
            if isinstance(hit_id, str) and hit_id not in scores:
                scores[hit_id] = float(score) if isinstance(score, int | float) else 0.0
        rows = await asyncio.gather(*(self._row(i) for i in scores))
        found: list[SearchItem] = []
        for row, score in zip(rows, scores.values(), strict=True):
            record = None if row is None else self._own(row)
            if record is None or not record.indexed:
                continue
            if tuple(record.namespace[: len(op.namespace_prefix)]) != op.namespace_prefix:
                continue
            if matches(self._value(record), op.filter):
                found.append(self._search_item(record, score))
        found.sort(key=lambda s: -(s.score or 0.0))
        return found[op.offset : op.offset + op.limit]

    def _search_item(self, record: Record, score: float | None) -> SearchItem:
        return SearchItem(
            namespace=tuple(record.namespace),
            key=record.key,
            value=self._value(record),
            created_at=moment(record.createdAt),
            updated_at=moment(record.updatedAt),
            score=score,
        )

    async def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        spaces = {tuple(r.namespace) for r in await self._listed()}
        chosen = [
            ns
            for ns in spaces
            if all(namespace_matches(c.match_type, c.path, ns) for c in op.match_conditions or ())
        ]
        if op.max_depth is not None:
            chosen = list({ns[: op.max_depth] for ns in chosen})
        return sorted(chosen)[op.offset : op.offset + op.limit]
