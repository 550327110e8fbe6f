"""How `MnemoStore` runs LangGraph ops: concurrent calls coalesced into rounds, each round a
few bulk requests (issue 30).

LangGraph's `aput`/`aget`/`asearch` each send a batch of one op; a graph under load (or
LangGraph's own load tests: 60,000 concurrent calls) sends thousands at once. One request
per op would queue them behind each other in the items group (one tenant's requests are
answered in order). So a store's batches wait in one queue on the client's loop, and each
*round* takes every batch waiting (up to `ROUND_OPS` ops) and runs them together:

1. **writes**: the puts and deletes of the round, the last write of each key winning
   (submission order), sent as items `write` requests (`MAX_WRITES` rows, `WRITE_BYTES`
   each): one bulk write and one change announcement per request;
2. **reads**: the gets as items `read` requests; the searches without a query and the
   namespace listings from one scan of their common namespace prefix; each distinct search
   with a query once (`Reader.search`);
3. **follow-ups**: what the reads found to write (a TTL refreshed on read, an expired item
   deleted), as one more write.

A caller's batch gets its results when its round ends, so its next call runs in a later
round and reads its writes; the rounds of a store run one at a time. Concurrent callers are
not ordered among themselves, so running a round's writes before its reads is one of their
possible orders. A batch with a read *before* a write would see that write: it runs alone,
its ops in order (a run of reads, then a run of writes, …).
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import GetOp, Item, ListNamespacesOp, Op, PutOp, Result, SearchOp

from schemas.item_writes import MAX_READS, MAX_WRITES
from schemas.scope import Scope
from services.integrations.langgraph_ops import item_text, item_texts
from services.integrations.langgraph_search import Reader, Scored, search_item
from services.integrations.store_records import (
    FACT_TYPE,
    RECORD_KEY,
    TTL_KEY,
    Record,
    moment,
    now_ms,
    prefix_tag,
    value_of,
)
from services.sdk.client import MemoryClient
from services.sdk.transport import RequestFailed

ROUND_OPS = 10_000
"""Ops of one round at most (whole batches: a bigger batch is a round of its own)."""
WRITE_BYTES = 400_000
"""JSON bytes of one `write` request's rows at most, well inside one message."""
MINUTE_MS = 60_000

Writes = dict[str, dict[str, Any]]
"""The writes of a phase by row id, in the order of each id's last write."""


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
    _drainer: asyncio.Task[None] | None = None

    async def run(self, ops: list[Op]) -> list[Result]:
        """`ops`' results, once the round that takes them has run (on the client's loop)."""
        done: asyncio.Future[list[Result]] = asyncio.get_running_loop().create_future()
        self._waiting.append((ops, done))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.get_running_loop().create_task(self._drain())
        return await done

    async def run_many(self, batches: Sequence[list[Op]]) -> list[list[Result] | BaseException]:
        """Each batch's results (or its error), the batches queued together."""
        return await asyncio.gather(*(self.run(ops) for ops in batches), return_exceptions=True)

    async def _drain(self) -> None:
        while self._waiting:
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
        for phase in phases:
            if not phase:
                continue
            if is_write(phase[0][2]):
                last: dict[str, PutOp] = {}
                for _, _, op in phase:
                    assert isinstance(op, PutOp)  # noqa: S101 - is_write
                    item_id = self.item_id(op.namespace, op.key)
                    last.pop(item_id, None)  # the last write of a key wins, and goes last
                    last[item_id] = op
                await self.send({i: self._write_of(i, op) for i, op in last.items()})
            else:
                await self._read(phase, results)
        return results

    # --- writes ----------------------------------------------------------------------------

    @staticmethod
    def _add(writes: Writes, write: dict[str, Any]) -> None:
        """Add `write`, the last write of its id (it replaces an earlier one, and moves last)."""
        writes.pop(write["id"], None)
        writes[write["id"]] = write

    def _write_of(self, item_id: str, op: PutOp) -> dict[str, Any]:
        """The items `write` of a put of row `item_id` (a delete when its value is None)."""
        if op.value is None:
            return {"id": item_id, "op": "delete"}
        value = dict(op.value)
        fields = self.fields if op.index is None or op.index is False else tuple(op.index)
        texts = [] if op.index is False else item_texts(value, fields)
        now = now_ms()
        record = {
            "namespace": list(op.namespace),
            "key": op.key,
            "value": json.dumps(value, ensure_ascii=False, separators=(",", ":")),
            "indexed": op.index is not False,
            "prefixes": [prefix_tag(op.namespace[:n]) for n in range(len(op.namespace) + 1)],
            "createdAt": now,  # what is read back is the row's own creation time
            "updatedAt": now,
            "texts": texts,
        }
        expiry = {
            "expiresAt": None if op.ttl is None else now + int(op.ttl * MINUTE_MS),
            "ttlMinutes": op.ttl,
        }
        return {
            "id": item_id,
            "op": "put",
            "content": item_text(value, texts),
            "metadata": {RECORD_KEY: record, TTL_KEY: expiry},
            "type": FACT_TYPE,
        }

    async def send(self, writes: Writes) -> None:
        """The writes as items `write` requests of at most `MAX_WRITES` rows and
        `WRITE_BYTES` bytes, one after the other."""
        chunk: list[dict[str, Any]] = []
        size = 0
        for write in writes.values():
            grown = size + _size(write)
            if chunk and (len(chunk) == MAX_WRITES or grown > WRITE_BYTES):
                await self._write(chunk)
                chunk, grown = [], grown - size
            chunk.append(write)
            size = grown
        if chunk:
            await self._write(chunk)

    async def _write(self, chunk: list[dict[str, Any]]) -> None:
        reply = await self.client.write_items(self.scope, chunk, timeout=self.write_timeout)
        if reply.error:
            raise RequestFailed(reply.error)

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
        self, phase: Sequence[tuple[int, int, Op]], results: list[list[Result]]
    ) -> None:
        gets = [(b, i, op) for b, i, op in phase if isinstance(op, GetOp)]
        ids = [self.item_id(get.namespace, get.key) for _, _, get in gets]
        listed = [
            (b, i, op)
            for b, i, op in phase
            if isinstance(op, ListNamespacesOp) or (isinstance(op, SearchOp) and not op.query)
        ]
        queries = {repr(op): op for _, _, op in phase if isinstance(op, SearchOp) and op.query}
        rows, snapshot, *answers = await asyncio.gather(
            self.rows(ids) if ids else _nothing(),
            self.reader.scan(_common_prefix([op for _, _, op in listed])) if listed else _none(),
            *(self.reader.search(op) for op in queries.values()),
        )
        found = dict(zip(queries, answers, strict=True))
        follow: Writes = {}
        at = now_ms()
        for (b, i, get), item_id in zip(gets, ids, strict=True):
            row = rows.get(item_id)
            record = None if row is None else self.own(row)
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
        if follow:
            await self.send(follow)


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


def _size(write: Mapping[str, Any]) -> int:
    """About the JSON bytes of a write (its texts counted as UTF-8 at worst, 4 a character)."""
    record = (write.get("metadata") or {}).get(RECORD_KEY) or {}
    texts = [write.get("content") or "", record.get("value") or "", *record.get("texts", [])]
    return 1_000 + 4 * sum(len(t) for t in texts)


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
