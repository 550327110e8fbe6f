"""How `MnemoStore` runs LangGraph ops: concurrent calls coalesced into rounds, each round a
few bulk requests (issue 30).

LangGraph's `aput`/`aget`/`asearch` each send a batch of one op; a graph under load (or
LangGraph's own load tests: 60,000 concurrent calls) sends thousands at once. One request
per op would queue them behind each other in the items group (one tenant's requests are
answered in order). So a store's batches wait in one queue on the client's loop, and each
*round* takes every batch waiting (up to `ROUND_OPS` ops) and runs them together:

1. **writes**: the puts and deletes of the round, the last write of each key winning
   (submission order), sent as items `write` requests (`MAX_WRITES` rows, `WRITE_BYTES`
   each): one bulk write and one change announcement per request; the last one also reads
   back the rows of the round's gets, and the first page of the scan its listings need is
   asked right behind it (`write_and_scan_items`): one round trip for the whole round;
2. **reads**: the gets not read back as items `read` requests; the searches without a
   query and the namespace listings from one scan of their common namespace prefix; each
   distinct search with a query once (`Reader.search`);
3. **follow-ups**: what the reads found to write (a TTL refreshed on read, an expired item
   deleted) goes with the next round's writes (or alone, when no round comes).

A caller's batch gets its results when its round ends, so its next call runs in a later
round and reads its writes; the rounds of a store run one at a time. Concurrent callers are
not ordered among themselves, so running a round's writes before its reads is one of their
possible orders. A batch with a read *before* a write would see that write: it runs alone,
its ops in order (a run of reads, then a run of writes, …).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import GetOp, Item, ListNamespacesOp, Op, PutOp, Result, SearchOp

from schemas.item_writes import MAX_READS
from schemas.requests import ItemReply
from schemas.scope import Scope
from services.integrations.langgraph_ops import put_write
from services.integrations.langgraph_search import Reader, Scored, search_item
from services.integrations.langgraph_writes import WriteLane, Writes, chunks
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
"""Rounds of one store in flight at once: a call that comes while they all run waits for the
next round. 1: with 4, ten threads of synchronous calls were measured no faster on a loaded
2-core machine (`benchmarks.upstream_langgraph_load --threads 10`), for more requests."""
ROUND_OPS = 10_000
"""Ops of one round at most (whole batches: a bigger batch is a round of its own)."""


def is_write(op: Op) -> bool:
    return isinstance(op, PutOp)


def mergeable(ops: Sequence[Op]) -> bool:
    """Whether the batch keeps its meaning when its writes run before its reads: no read
    comes before a write."""
    first_read = next((i for i, op in enumerate(ops) if not is_write(op)), len(ops))
    return not any(is_write(op) for op in ops[first_read:])


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
    _workers: int = 0
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _later: Writes = field(default_factory=dict)
    """What reads found to write (TTL refreshes, expired items' deletes): the next round
    sends it before its own writes, so it costs no request of its own under load."""
    lane: WriteLane = field(init=False)
    """Where batches of puts and deletes alone go (`langgraph_writes`)."""

    def __post_init__(self) -> None:
        self.lane = WriteLane(self.client, self.scope, self.write_timeout)

    async def run(self, ops: list[Op]) -> list[Result]:
        """`ops`' results, once the round that takes them has run (on the client's loop); a
        batch of puts and deletes alone once the broker has them (`langgraph_writes`). An
        earlier acknowledged write that failed to apply is raised here."""
        self.lane.check()
        if ops and all(is_write(op) for op in ops):
            return await self._write_behind(ops)
        done: asyncio.Future[list[Result]] = asyncio.get_running_loop().create_future()
        self._waiting.append((ops, done))
        if self._workers < ROUNDS_AT_ONCE:
            self._workers += 1
            task = asyncio.get_running_loop().create_task(self._drain())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return await done

    async def _write_behind(self, ops: list[Op]) -> list[Result]:
        last: Writes = {}
        for op in ops:
            assert isinstance(op, PutOp)  # noqa: S101 - is_write
            item_id = self.item_id(op.namespace, op.key)
            last.pop(item_id, None)  # the last write of a key wins, and goes last
            last[item_id] = put_write(item_id, op, self.fields)
        pending, self._later = self._later, {}  # what earlier reads found to write goes first
        await self.lane.send({i: w for i, w in pending.items() if i not in last} | last)
        return [None] * len(ops)

    async def run_many(self, batches: Sequence[list[Op]]) -> list[list[Result] | BaseException]:
        """Each batch's results (or its error), the batches queued together."""
        return await asyncio.gather(*(self.run(ops) for ops in batches), return_exceptions=True)

    async def _drain(self) -> None:
        """One worker: rounds of what waits, until nothing does (the last worker then sends
        the follow-ups no round took)."""
        try:
            while self._waiting or (self._later and self._workers == 1):
                if not self._waiting:
                    pending, self._later = self._later, {}
                    with contextlib.suppress(RequestFailed, TimeoutError):
                        await self.lane.send(pending)  # a refresh or an expiry may be lost
                    continue
                batch = self._take()
                try:
                    results = await self._round([ops for ops, _ in batch])
                except Exception as exc:  # noqa: BLE001 - handed to every caller of the round
                    for _, done in batch:
                        if not done.done():
                            done.set_exception(exc)
                    continue
                for (_, done), result in zip(batch, results, strict=True):
                    if not done.done():  # a caller that gave up (cancelled) gets nothing
                        done.set_result(result)
        finally:
            self._workers -= 1

    def _take(self) -> list[tuple[list[Op], asyncio.Future[list[Result]]]]:
        """The next round's batches: a batch that is not `mergeable` alone, else every
        mergeable batch waiting in a row, up to `ROUND_OPS` ops."""
        taken = [self._waiting.popleft()]
        if not mergeable(taken[0][0]):
            return taken
        count = len(taken[0][0])
        while self._waiting and mergeable(self._waiting[0][0]):
            if count + len(self._waiting[0][0]) > ROUND_OPS:
                break
            count += len(self._waiting[0][0])
            taken.append(self._waiting.popleft())
        return taken

    async def _round(self, batches: Sequence[list[Op]]) -> list[list[Result]]:
        results: list[list[Result]] = [[None] * len(ops) for ops in batches]
        slots = [(b, i, op) for b, ops in enumerate(batches) for i, op in enumerate(ops)]
        phases: list[list[tuple[int, int, Op]]] = []
        if len(batches) > 1:  # all mergeable: every write, then every read
            phases = [
                [s for s in slots if is_write(s[2])],
                [s for s in slots if not is_write(s[2])],
            ]
        else:  # one batch: runs of reads and writes, in order
            for slot in slots:
                if phases and is_write(phases[-1][0][2]) == is_write(slot[2]):
                    phases[-1].append(slot)
                else:
                    phases.append([slot])
        pending, self._later = self._later, {}
        if pending and not (phases[0] and is_write(phases[0][0][2])):
            await self.send(pending)  # what earlier reads found to write goes first
            pending = {}
        known: dict[str, Mapping[str, Any] | None] | None = None
        first: ItemReply | None = None
        for n, phase in enumerate(phases):
            if not phase:
                continue
            if is_write(phase[0][2]):
                last: dict[str, PutOp] = {}
                for _, _, op in phase:
                    assert isinstance(op, PutOp)  # noqa: S101 - is_write
                    item_id = self.item_id(op.namespace, op.key)
                    last.pop(item_id, None)  # the last write of a key wins, and goes last
                    last[item_id] = op
                writes = {i: w for i, w in pending.items() if i not in last}
                pending = {}
                writes |= {i: put_write(i, op, self.fields) for i, op in last.items()}
                after = phases[n + 1] if n + 1 < len(phases) else []
                gets = [
                    self.item_id(op.namespace, op.key)
                    for _, _, op in after
                    if isinstance(op, GetOp)
                ]
                listed = [op for _, _, op in after if _listing(op)]
                prefix = _common_prefix(listed) if listed else None
                known, first = await self.send(writes, read_back=gets, scan=prefix)
            else:
                await self._read(phase, results, known or {}, first)
                known, first = None, None
        return results

    # --- writes ----------------------------------------------------------------------------

    @staticmethod
    def _add(writes: Writes, write: dict[str, Any]) -> None:
        """Add `write`, the last write of its id (it replaces an earlier one, and moves last)."""
        writes.pop(write["id"], None)
        writes[write["id"]] = write

    async def send(
        self, writes: Writes, read_back: Sequence[str] = (), scan: Sequence[str] | None = None
    ) -> tuple[dict[str, Mapping[str, Any] | None], ItemReply | None]:
        """The writes as items `write` requests of at most `MAX_WRITES` rows and
        `WRITE_BYTES` bytes, one after the other. The last one also reads back the visible
        rows among `read_back` (those it answered, by id), and with `scan` (a namespace
        prefix) the first page of that prefix's scan after it comes in the same round trip
        (`write_and_scan_items`): a round of writes and reads costs one round trip."""
        *first, last = list(chunks(writes)) or [[]]
        for chunk in first:
            await self._write(chunk, [], None)
        return await self._write(last, read_back, scan) if last else ({}, None)

    async def _write(
        self, chunk: list[dict[str, Any]], read_back: Sequence[str], scan: Sequence[str] | None
    ) -> tuple[dict[str, Mapping[str, Any] | None], ItemReply | None]:
        ids = sorted(set(read_back))
        asked = ids if len(ids) <= MAX_READS else []
        first = None
        if scan is None:
            reply = await self.client.write_items(
                self.scope, chunk, read_back=asked, timeout=self.write_timeout
            )
        else:
            reply, first = await self.client.write_and_scan_items(
                self.scope,
                chunk,
                read_back=asked,
                tagged={PREFIXES_KEY: prefix_tag(scan)},
                limit=SCAN_PAGE,
                timeout=self.write_timeout,
            )
        if reply.error:
            raise RequestFailed(reply.error)
        if first is not None and first.error:
            first = None  # the reads scan again, and report it
        if not asked or reply.next_after is not None:
            return {}, first  # none read back, or not all of them: the reads ask again
        return {i: None for i in asked} | {str(row.get("id")): row for row in reply.items}, first

    def refresh(self, writes: Writes, records: Iterable[Record]) -> None:
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
                self._add(writes, {"id": item_id, "op": "patch", "metadata": {TTL_KEY: expiry}})

    # --- reads -----------------------------------------------------------------------------

    async def rows(self, ids: Sequence[str]) -> dict[str, Mapping[str, Any]]:
        """The visible rows among `ids`, by id (items `read`, `MAX_READS` ids a request)."""
        found: dict[str, Mapping[str, Any]] = {}
        todo = sorted(set(ids))
        while todo:
            asked = todo[:MAX_READS]
            reply = await self.client.read_items(self.scope, asked, timeout=self.timeout)
            if reply.error:
                raise RequestFailed(reply.error)
            found |= {str(row.get("id")): row for row in reply.items}
            rest = [] if reply.next_after is None else [i for i in asked if i >= reply.next_after]
            todo = rest + todo[MAX_READS:]
        return found

    async def _read(
        self,
        phase: Sequence[tuple[int, int, Op]],
        results: list[list[Result]],
        known: Mapping[str, Mapping[str, Any] | None],
        first: ItemReply | None = None,
    ) -> None:
        """Answer the reads of a phase; `known`: rows already read (None: found missing). The
        gets below the prefix of the phase's scan read it (it holds every live item there)."""
        gets = [(b, i, op) for b, i, op in phase if isinstance(op, GetOp)]
        ids = [self.item_id(get.namespace, get.key) for _, _, get in gets]
        listed = [(b, i, op) for b, i, op in phase if _listing(op)]
        queries = {repr(op): op for _, _, op in phase if isinstance(op, SearchOp) and op.query}
        prefix = _common_prefix([op for _, _, op in listed]) if listed else None
        unknown = [
            item_id
            for (_, _, get), item_id in zip(gets, ids, strict=True)
            if item_id not in known and (prefix is None or get.namespace[: len(prefix)] != prefix)
        ]
        asked = set(unknown)
        rows, snapshot, *answers = await asyncio.gather(
            self.rows(unknown) if unknown else _nothing(),
            self.reader.scan(prefix, first=first) if prefix is not None else _none(),
            *(self.reader.search(op) for op in queries.values()),
        )
        found = dict(zip(queries, answers, strict=True))
        scanned = {(tuple(r.namespace), r.key): r for r, _ in snapshot or []}
        follow: Writes = {}
        at = now_ms()
        for (b, i, get), item_id in zip(gets, ids, strict=True):
            if item_id in known or item_id in asked:
                row = known[item_id] if item_id in known else rows.get(item_id)
                record = None if row is None else self.own(row)
            else:  # live and unexpired, as the scan holds it
                record = scanned.get((get.namespace, get.key))
            if record is None or tuple(record.namespace) != get.namespace or record.key != get.key:
                continue
            if record.expired(at):  # expiry swept on read
                self._add(follow, {"id": item_id, "op": "delete"})
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
                results[b][i] = self.reader.namespaces_in(snapshot or [], op)
            elif isinstance(op, SearchOp):
                scored: list[Scored] = (
                    found[repr(op)] if op.query else self.reader.search_in(snapshot or [], op)
                )
                if op.refresh_ttl:
                    self.refresh(follow, [record for record, _ in scored])
                results[b][i] = [search_item(record, score) for record, score in scored]
        for write in follow.values():  # sent first thing in the next round (or at the end)
            if write["id"] not in self._later or write["op"] == "delete":
                self._add(self._later, write)


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


async def _nothing() -> dict[str, Mapping[str, Any]]:
    return {}


async def _none() -> list[Scored] | None:
    return None
