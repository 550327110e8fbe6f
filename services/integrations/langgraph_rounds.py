"""How `MnemoStore` runs LangGraph ops: writes buffered, concurrent reads coalesced into
rounds, each round a few bulk requests (issue 30).

A batch runs in order, a run of ops at a time: a run of puts and deletes goes to the
store's write lane (`langgraph_writes`: buffered, published in the store's next write
request, read back through the lane's overlay); a run of reads waits for the next *round*.
LangGraph's `aput`/`aget`/`asearch` each send a batch of one op; a graph under load (or
LangGraph's own load tests: 60,000 concurrent calls) sends thousands at once, and one
request per op would queue them behind each other in the items group (one tenant's requests
are answered in order). So each round takes every read waiting (up to `ROUND_OPS` ops) and
publishes, under the lane's lock, with one snapshot of its buffer (`Overlay`):

* the gets as items `read` requests (`MAX_READS` ids each), except those below the prefix
  of the round's scan, which it answers;
* the listings and the searches without a query: one scan of their common namespace prefix;
* each distinct search with a query once (`Reader.search`); a round that has one publishes
  the buffer first, so the items group scores every item the store wrote.

The answers are laid under the overlay (a buffered put is the item, a buffered delete its
absence), then TTLs are checked; what the reads found to write (a TTL refreshed on read, an
expired item deleted) goes to the lane, unless the caller wrote that key meanwhile. A
caller's batch gets its results when its round ends; the rounds of a store run one at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import GetOp, Item, ListNamespacesOp, Op, PutOp, Result, SearchOp

from schemas.item_writes import MAX_READS
from schemas.requests import ItemReply, ItemRequest
from schemas.scope import Scope
from services.integrations.langgraph_ops import put_write
from services.integrations.langgraph_search import Reader, Scored, search_item
from services.integrations.langgraph_writes import Overlay, WriteLane, Writes, lane_of
from services.integrations.store_records import (
    MINUTE_MS,
    PREFIXES_KEY,
    SCAN_PAGE,
    TTL_KEY,
    Record,
    moment,
    now_ms,
    prefix_tag,
    value_of,
)
from services.sdk.client import MemoryClient
from services.sdk.transport import RequestFailed

ROUNDS_AT_ONCE = 1
"""Rounds of one store in flight at once. 1: each round scans, and on a loaded 2-core
machine two at once made LangGraph's threaded load slower (more, smaller rounds)."""
GATHER_MAX = 0.03
"""Seconds a round waits at most, after the one before it, for its callers to come back:
until as many batches wait as that round answered (`Rounds._gather`). Ten threads of
synchronous calls then share a round instead of one of them starting a round alone, the
others waiting a whole round behind it (a worker that ended when nothing waited did that
for every other round of LangGraph's `test_large_batches`)."""
GATHER = 0.004
"""Seconds a round waits at a time while more callers than the round before's keep coming."""
ROUND_OPS = 10_000
"""Ops of one round at most (whole batches: a bigger batch is a round of its own)."""


def is_write(op: Op) -> bool:
    return isinstance(op, PutOp)


@dataclass
class Rounds:
    """The round runner of one `MnemoStore`: `item_id` names a key's row, `own` reads an
    item out of a row (None: not one of the store's), `fields` are the indexed paths."""

    client: MemoryClient
    scope: Scope
    reader: Reader
    own: Callable[[Mapping[str, Any]], Record | None]
    item_id: Callable[[tuple[str, ...], str], str]
    fields: tuple[str, ...]
    timeout: float | None = None
    write_timeout: float | None = None
    _waiting: deque[tuple[list[Op], asyncio.Future[list[Result]]]] = field(default_factory=deque)
    rounds: int = 0
    """Rounds run so far."""
    _workers: int = 0
    _arrival: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    lane: WriteLane = field(init=False)
    """Where puts and deletes go (`langgraph_writes`), shared by the tenant's stores."""

    def __post_init__(self) -> None:
        self.lane = lane_of(self.client, self.scope)

    async def run(self, ops: list[Op]) -> list[Result]:
        """`ops`' results, in order (on the client's loop): each run of writes once the
        lane took it, each run of reads once its round ran. An earlier acknowledged write
        that failed to apply is raised here."""
        self.lane.check()
        results: list[Result] = [None] * len(ops)
        start = 0
        while start < len(ops):
            end = start
            while end < len(ops) and is_write(ops[end]) == is_write(ops[start]):
                end += 1
            if is_write(ops[start]):
                await self.lane.send(self._writes(ops[start:end]), self.write_timeout)
            else:
                results[start:end] = await self._queued(ops[start:end])
            start = end
        return results

    def _writes(self, ops: Sequence[Op]) -> Writes:
        last: Writes = {}
        for op in ops:
            assert isinstance(op, PutOp)  # noqa: S101 - is_write
            item_id = self.item_id(op.namespace, op.key)
            last.pop(item_id, None)  # the last write of a key wins, and goes last
            last[item_id] = put_write(item_id, op, self.fields)
        return last

    async def run_many(self, batches: Sequence[list[Op]]) -> list[list[Result] | BaseException]:
        """Each batch's results (or its error), the batches queued together."""
        return await asyncio.gather(*(self.run(ops) for ops in batches), return_exceptions=True)

    async def _queued(self, ops: list[Op]) -> list[Result]:
        done: asyncio.Future[list[Result]] = asyncio.get_running_loop().create_future()
        self._waiting.append((ops, done))
        self._arrival.set()
        if self._workers < ROUNDS_AT_ONCE:
            self._workers += 1  # back down as the worker ends, not in a later callback
            worker = asyncio.get_running_loop().create_task(self._drain())
            self._tasks.add(worker)
            worker.add_done_callback(self._tasks.discard)
        return await done

    async def _drain(self) -> None:
        """Rounds of what waits, until nothing does."""
        try:
            await self._rounds()
        finally:
            self._workers -= 1

    async def _rounds(self) -> None:
        answered = 0  # batches of the round before (none before a worker's first)
        while True:
            if answered:
                await self._gather(answered)
            if not self._waiting:
                return
            batch = [self._waiting.popleft()]
            count = len(batch[0][0])
            while self._waiting and count + len(self._waiting[0][0]) <= ROUND_OPS:
                count += len(self._waiting[0][0])
                batch.append(self._waiting.popleft())
            answered = len(batch)
            slots = [(b, i, op) for b, (ops, _) in enumerate(batch) for i, op in enumerate(ops)]
            results: list[list[Result]] = [[None] * len(ops) for ops, _ in batch]
            self.rounds += 1
            # the lane's writes wait longer while reads run (`langgraph_writes.READING_GAP`)
            self.lane.reading += 1
            try:
                await self._read(slots, results)
            except Exception as exc:  # noqa: BLE001 - handed to every caller of the round
                for _, done in batch:
                    if not done.done():
                        done.set_exception(exc)
                continue
            finally:
                self.lane.reading -= 1
                self.lane.read_at = asyncio.get_running_loop().time()
            for (_, done), result in zip(batch, results, strict=True):
                if not done.done():  # a caller that gave up (cancelled) gets nothing
                    done.set_result(result)

    async def _gather(self, expected: int) -> None:
        """Wait until `expected` batches wait; then, if more came (a flood of callers, not
        the last round's coming back), as long as more keep coming, `GATHER` at a time:
        `GATHER_MAX` seconds in all."""
        loop = asyncio.get_running_loop()
        ends = loop.time() + GATHER_MAX
        while len(self._waiting) < expected and (left := ends - loop.time()) > 0:
            self._arrival.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._arrival.wait(), left)
        seen = expected
        while len(self._waiting) > seen and loop.time() < ends:
            seen = len(self._waiting)
            await asyncio.sleep(GATHER)

    # --- reads -----------------------------------------------------------------------------

    async def rows(self, ids: Sequence[str], first: Sequence[ItemReply] = ()) -> dict[str, Any]:
        """The visible rows among `ids`, by id (items `read`, `MAX_READS` ids a request);
        `first`: the replies of the first requests, `MAX_READS` ids each, asked already."""
        found: dict[str, Mapping[str, Any]] = {}
        todo = sorted(set(ids))
        replies = list(first)
        while todo:
            asked = todo[:MAX_READS]
            if replies:
                reply = replies.pop(0)
            else:
                reply = await self.client.read_items(self.scope, asked, timeout=self.timeout)
            if reply.error:
                raise RequestFailed(reply.error)
            found |= {str(row.get("id")): row for row in reply.items}
            rest = [] if reply.next_after is None else [i for i in asked if i >= reply.next_after]
            todo = rest + todo[MAX_READS:]
        return found

    async def _publish(
        self, unknown: list[str], prefix: tuple[str, ...] | None, queries: bool
    ) -> tuple[Overlay, asyncio.Task[list[ItemReply]] | None]:
        """Publish the round's first requests (its gets' reads, its scan's first page) with
        the lane's snapshot; with `queries`, the buffer goes first."""
        requests = [
            ItemRequest(scope=self.scope, op="read", ids=unknown[n : n + MAX_READS])
            for n in range(0, len(unknown), MAX_READS)
        ]
        if prefix is not None:
            tagged = {PREFIXES_KEY: prefix_tag(prefix)}
            requests.append(
                ItemRequest(scope=self.scope, op="scan", tagged=tagged, limit=SCAN_PAGE)
            )
        async with self.lane.lock:
            if queries:
                await self.lane.publish_locked()
            overlay = self.lane.snapshot()
            if not requests:
                return overlay, None
            task = await self.client.item_requests_logged(requests, timeout=self.timeout)
        return overlay, task

    async def _read(
        self, phase: Sequence[tuple[int, int, Op]], results: list[list[Result]]
    ) -> None:
        """Answer a round's reads (the module docstring)."""
        gets = [(b, i, op) for b, i, op in phase if isinstance(op, GetOp)]
        ids = [self.item_id(get.namespace, get.key) for _, _, get in gets]
        listed = [op for _, _, op in phase if _listing(op)]
        queries = {repr(op): op for _, _, op in phase if isinstance(op, SearchOp) and op.query}
        prefix = _common_prefix(listed) if listed else None
        unknown = sorted(
            {
                item_id
                for (_, _, get), item_id in zip(gets, ids, strict=True)
                if not _under(get.namespace, prefix)
            }
        )
        overlay, task = await self._publish(unknown, prefix, bool(queries))
        replies = [] if task is None else await task
        first_scan = replies.pop() if prefix is not None else None
        rows, scanned, *answers = await asyncio.gather(
            self.rows(unknown, replies),
            _none() if prefix is None else self.reader.scan(prefix, first=first_scan, expired=True),
            *(self.reader.search(op) for op in queries.values()),
        )
        found = dict(zip(queries, answers, strict=True))
        at = now_ms()
        follow: Writes = {}
        snapshot = self._laid(prefix, scanned or [], overlay, follow, at)
        by_key = {(tuple(r.namespace), r.key): r for r, _ in snapshot}
        for (b, i, get), item_id in zip(gets, ids, strict=True):
            if not _under(get.namespace, prefix):  # read by id, not found by the scan
                row = rows.get(item_id)
                record = overlay.record(item_id, None if row is None else self.own(row))
                if record is not None and record.expired(at):  # expiry swept on read
                    follow[item_id] = {"id": item_id, "op": "delete"}
                    record = None
            else:
                record = by_key.get((get.namespace, get.key))
            if record is None or tuple(record.namespace) != get.namespace or record.key != get.key:
                continue
            if get.refresh_ttl:
                self.refresh(follow, [record])
            results[b][i] = Item(
                value=value_of(record),
                key=record.key,
                namespace=tuple(record.namespace),
                created_at=moment(record.createdAt),
                updated_at=moment(record.updatedAt),
            )
        for b, i, op in phase:
            if isinstance(op, ListNamespacesOp):
                results[b][i] = self.reader.namespaces_in(snapshot, op)
            elif isinstance(op, SearchOp):
                scored: list[Scored] = (
                    found[repr(op)] if op.query else self.reader.search_in(snapshot, op)
                )
                if op.refresh_ttl:
                    self.refresh(follow, [record for record, _ in scored])
                results[b][i] = [search_item(record, score) for record, score in scored]
        if follow:
            self.lane.add(follow, since=overlay.seq)

    def _laid(
        self,
        prefix: tuple[str, ...] | None,
        scanned: Sequence[Scored],
        overlay: Overlay,
        follow: Writes,
        at: int,
    ) -> list[Scored]:
        """The scan of `prefix` under the overlay, unexpired (the expired noted in `follow`
        to delete)."""
        if prefix is None:
            return []
        items: dict[str, Scored] = {
            self.item_id(tuple(r.namespace), r.key): (r, score) for r, score in scanned
        }
        for item_id in overlay.writes:
            known = items.get(item_id)
            record = overlay.record(item_id, None if known is None else known[0])
            if record is None:
                items.pop(item_id, None)
            elif tuple(record.namespace[: len(prefix)]) == prefix:
                items[item_id] = (record, None)
        live: list[Scored] = []
        for item_id, (record, score) in items.items():
            if record.expired(at):
                follow[item_id] = {"id": item_id, "op": "delete"}
            else:
                live.append((record, score))
        return live

    def refresh(self, writes: Writes, records: Sequence[Record]) -> None:
        """Add a TTL refresh of each record that has a TTL: only its TTL key is written, so a
        put that came meanwhile keeps its value (a patch does nothing to a deleted row)."""
        for record in records:
            if record.ttlMinutes is None:
                continue
            expiry = {
                "expiresAt": now_ms() + int(record.ttlMinutes * MINUTE_MS),
                "ttlMinutes": record.ttlMinutes,
            }
            item_id = self.item_id(tuple(record.namespace), record.key)
            if writes.get(item_id, {}).get("op") != "delete":
                writes[item_id] = {"id": item_id, "op": "patch", "metadata": {TTL_KEY: expiry}}


def _listing(op: Op) -> bool:
    """Whether `op` is answered from the round's scan (a listing, a search without a query)."""
    return isinstance(op, ListNamespacesOp) or (isinstance(op, SearchOp) and not op.query)


def _common_prefix(ops: Sequence[Op]) -> tuple[str, ...]:
    """The longest namespace prefix every op reads below (a listing reads everything)."""
    prefixes = [op.namespace_prefix if isinstance(op, SearchOp) else () for op in ops]
    common = list(prefixes[0]) if prefixes else []
    for prefix in prefixes[1:]:
        n = 0
        while n < min(len(common), len(prefix)) and common[n] == prefix[n]:
            n += 1
        common = common[:n]
    return tuple(common)


def _under(namespace: tuple[str, ...], prefix: tuple[str, ...] | None) -> bool:
    """Whether a get of `namespace` is answered by the round's scan of `prefix`."""
    return prefix is not None and namespace[: len(prefix)] == prefix


async def _none() -> list[Scored] | None:
    return None
