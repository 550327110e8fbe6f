"""`MnemoStore`'s puts and deletes: written behind, read through an overlay (issue 30).

**Acknowledged.** A put or a delete returns once the broker has the items `write` request
that carries it, unless the store (its tenant, on this client) already has a write request
in the items group or published one less than `WRITE_GAP` ago (`READING_GAP` while the
store's reads run): then it returns at once, *buffered*, and goes in the store's next write
request, published as soon as that one is applied and the gap has passed (typically
0.05–0.3 s later, up to about 1 s under reads; with whatever else came meanwhile, the last
write of a key winning). So the items group holds one write request of a store at a time,
and under load many writes share its few database commands, while the callers do not wait
for it. `flush` waits until every write acknowledged
so far is published and applied; closing the client publishes what is still buffered
(`publish_buffered`); a process that ends without closing it (or without the client's loop
running) loses the writes still buffered, at most one request's worth.

**Read your writes, exactly.** Every request of a store goes to the tenant's partition of
the items topic, answered in order, so a read published after a write request sees it. A
write still buffered is not in the log yet: each read takes a snapshot of the buffer
(`Overlay`) under the lane's lock, right before it publishes its requests (and a write
request is published under the same lock), and lays it over what the items group answered
(`Overlay.record`): a buffered put is the item, with the creation time the group will give
it (the row's, when the read found it live, else the buffer's time, which the write request
carries as its record time and the group applies it at), a buffered delete its absence.
Stores of one tenant on one client share one lane (`lane_of`), so another instance reads
them too; another process reads a buffered write once it is published.

A write the group did not apply (refused, or past its deadline, `timeout`) is raised by the
store's next call (`check`). Until its client has had a first reply, a write waits to be
applied: a fresh client's reply reader may deliver its first records only after it
restarts (`services.sdk.replies`), which a put's `write_timeout` absorbs and a read's
timeout may not.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from cachetools import LRUCache

from schemas.item_writes import MAX_WRITES
from schemas.requests import ItemReply
from schemas.scope import Scope
from services.integrations.store_records import RECORD_KEY, TTL_KEY, Record, now_ms
from services.sdk.client import MemoryClient
from services.sdk.transport import RequestFailed

WRITE_BYTES = 400_000
"""JSON bytes of one `write` request's rows at most, well inside one message."""

Writes = dict[str, dict[str, Any]]
"""Writes by row id, in the order of each id's last write."""


def write_size(write: Mapping[str, Any]) -> int:
    """About the JSON bytes of a write (its texts counted as UTF-8 at worst, 4 a character)."""
    record = (write.get("metadata") or {}).get(RECORD_KEY) or {}
    texts = [write.get("content") or "", record.get("value") or "", *record.get("texts", [])]
    return 1_000 + 4 * sum(len(t) for t in texts)


def chunks(writes: Writes) -> Iterator[list[dict[str, Any]]]:
    """`writes` in requests of at most `MAX_WRITES` rows and `WRITE_BYTES` bytes, in order."""
    chunk: list[dict[str, Any]] = []
    size = 0
    for write in writes.values():
        grown = size + write_size(write)
        if chunk and (len(chunk) == MAX_WRITES or grown > WRITE_BYTES):
            yield chunk
            chunk, grown = [], grown - size
        chunk.append(write)
        size = grown
    if chunk:
        yield chunk


WRITE_GAP = 0.25
"""Seconds between the publications of two write requests of a lane at least: a write that
comes sooner is buffered (so a busy store's writes cost the items group a request every
quarter second, not one per round of reads)."""
READING_GAP = 1.0
"""`WRITE_GAP` while the lane's reads run (a round in flight, or one ended less than
`WRITE_GAP` ago). The items group answers a tenant's requests one at a time and a write
request holds it 40-130 ms (its rows read and written, their history, the change
announced), so a round of reads published behind one waits that long, whereas a buffered
write costs a read nothing (the overlay). In LangGraph's `test_large_batches` (10 threads) a
quarter-second gap put a write request in front of one round in four, half of the test's
time; a second, one in thirty."""
KEYS_KEPT = 100_000
"""Keys whose last write a lane remembers (what a read's follow-up checks, `WriteLane.add`)."""


@dataclass(frozen=True)
class Overlay:
    """The writes a read lays over what it was answered: the lane's buffer when the read
    was published; `at`: their request's time; `seq`: the lane's write count then."""

    writes: Writes
    at: int
    seq: int

    def record(self, item_id: str, base: Record | None) -> Record | None:
        """Item `item_id` as the read shows it: `base` (what the group answered: live,
        expiry not checked; None when absent or deleted) under the buffered write."""
        write = self.writes.get(item_id)
        if write is None:
            return base
        if write["op"] == "delete":
            return None
        metadata = write.get("metadata") or {}
        if write["op"] == "patch":  # a TTL refresh of a visible row
            ttl = metadata.get(TTL_KEY)
            return None if base is None else base.model_copy(update=dict(ttl or {}))
        created = self.at if base is None else base.createdAt  # as the group will apply it
        return Record.model_validate(
            {**metadata[RECORD_KEY], **(metadata.get(TTL_KEY) or {}), "createdAt": created}
        )


@dataclass
class WriteLane:
    """The write-behind lane of one tenant on one client (see the module docstring)."""

    client: MemoryClient
    scope: Scope
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held while a write request or a read's requests are published (`Overlay`)."""
    reading: int = 0
    """Rounds of reads in flight on the lane (`langgraph_rounds`)."""
    read_at: float = -READING_GAP
    """When the lane's last round of reads ended (the loop's clock)."""
    requests: int = 0
    """Write requests published so far."""
    seq: int = 0
    """Writes acknowledged so far."""
    _buffer: Writes = field(default_factory=dict)
    _at: int = 0
    _timeout: float | None = None  # the buffer's request deadline: its writers' longest
    _published: asyncio.Future[None] | None = None
    _early: bool = False  # a write of the buffer returned before it was published
    _writer: asyncio.Task[None] | None = None
    _last_publish: float = -WRITE_GAP
    _applying: set[asyncio.Task[list[ItemReply]]] = field(default_factory=set)
    _failure: RequestFailed | None = None
    _last: LRUCache[str, int] = field(default_factory=lambda: LRUCache(maxsize=KEYS_KEPT))

    def add(
        self, writes: Writes, since: int | None = None, timeout: float | None = None
    ) -> asyncio.Future[None]:
        """Buffer `writes` (the last write of a key wins; a patch does not replace a put or
        a delete); the future of their publication. `since`: the `seq` of the read that
        found them to write (TTL refreshes, expired items): a key written since is left
        alone. `timeout`: the seconds the writer lets them wait to be applied (the
        request's deadline is the longest its writers gave; else the client's default)."""
        if timeout is not None:
            self._timeout = max(timeout, self._timeout or 0.0)
        if self._published is None:
            self._published = asyncio.get_running_loop().create_future()
            self._published.add_done_callback(_retrieve)
        for item_id, write in writes.items():
            if since is not None and self._last.get(item_id, -1) > since:
                continue
            old = self._buffer.get(item_id)
            if write["op"] == "patch" and old is not None and old["op"] != "patch":
                continue
            if not self._buffer:
                self._at = now_ms()
            self._buffer.pop(item_id, None)
            self._buffer[item_id] = write
            if since is None:
                self.seq += 1
                self._last[item_id] = self.seq
        if self._buffer and (self._writer is None or self._writer.done()):
            self._writer = asyncio.get_running_loop().create_task(self._write())
        return self._published

    async def send(self, writes: Writes, timeout: float | None = None) -> None:
        """Buffer `writes` (`add`); return once the broker has them, or at once when a
        write request of the lane is in the items group (the module docstring)."""
        cold = self.client.reader_stats.replies == 0
        busy = not cold and (bool(self._applying) or self._gap() > 0)
        published = self.add(writes, timeout=timeout)
        if cold:  # the client's first reply (the module docstring)
            await self.flush()
        elif busy:
            self._early = True
        else:
            await asyncio.shield(published)

    def snapshot(self) -> Overlay:
        """What a read publishing now lays over its answers (hold `lock`)."""
        return Overlay(dict(self._buffer), self._at, self.seq)

    def _gap(self) -> float:
        """Seconds until the next write request may be published (`WRITE_GAP`, or
        `READING_GAP` while reads run)."""
        now = asyncio.get_running_loop().time()
        reads = self.reading > 0 or now - self.read_at < WRITE_GAP
        return self._last_publish + (READING_GAP if reads else WRITE_GAP) - now

    async def _write(self) -> None:
        while self._buffer:
            if self._applying:  # one write request of the lane in the group's queue at a time
                await asyncio.wait(set(self._applying))
                continue
            if (gap := self._gap()) > 0:  # looked at again as reads start or stop
                await asyncio.sleep(min(gap, WRITE_GAP))
                continue
            async with self.lock:
                await self.publish_locked()

    async def publish_locked(self) -> None:
        """Publish the buffer as write requests at its time (hold `lock`)."""
        taken, at, done, early = self._buffer, self._at, self._published, self._early
        timeout, self._timeout = self._timeout, None
        self._buffer, self._published, self._early = {}, None, False
        self._last_publish = asyncio.get_running_loop().time()
        try:
            for chunk in chunks(taken):
                applying = await self.client.write_items_logged(
                    self.scope, chunk, timeout=timeout, at=at
                )
                self.requests += 1
                self._applying.add(applying)
                applying.add_done_callback(self._applied)
        except Exception as exc:  # noqa: BLE001 - to the callers waiting, or the next call
            if early and self._failure is None:
                self._failure = RequestFailed(
                    f"a put or delete this store acknowledged was not published: {exc!r}"
                )
            if done is not None and not done.done():
                done.set_exception(exc)
            return
        if done is not None and not done.done():
            done.set_result(None)

    def _applied(self, task: asyncio.Task[list[ItemReply]]) -> None:
        self._applying.discard(task)
        if task.cancelled():
            error: str | None = "cancelled before its reply came"
        elif (exc := task.exception()) is not None:
            error = repr(exc)
        else:
            error = next((reply.error for reply in task.result() if reply.error), None)
        if error is not None and self._failure is None:
            self._failure = RequestFailed(
                f"a put or delete this store acknowledged was not applied: {error}"
            )

    def check(self) -> None:
        """Raise (once) the failure of a write acknowledged earlier, if one failed."""
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    async def publish_buffered(self) -> None:
        """Publish what the lane holds now, once the broker has it (not waiting for the
        group to apply it): run when the client closes (`ClosingHooks`), so the writes it
        acknowledged early are in the log, the source of truth, before the client goes."""
        if self._buffer:
            async with self.lock:
                await self.publish_locked()

    async def flush(self) -> None:
        """Wait until every write acknowledged so far is published and applied (then
        `check`)."""
        while self._buffer or self._applying:
            if self._buffer and (self._writer is None or self._writer.done()):
                self._writer = asyncio.get_running_loop().create_task(self._write())
            waits: set[asyncio.Future[Any]] = set(self._applying)
            if self._writer is not None and not self._writer.done():
                waits.add(self._writer)
            await asyncio.wait(waits)
        self.check()


def _retrieve(future: asyncio.Future[None]) -> None:
    """A publication nobody awaited (its writes returned early) leaves no warning."""
    if not future.cancelled():
        future.exception()


_LANES: weakref.WeakKeyDictionary[MemoryClient, dict[Scope, WriteLane]] = (
    weakref.WeakKeyDictionary()
)


def lane_of(client: MemoryClient, scope: Scope) -> WriteLane:
    """The lane of `scope` on `client`: shared by the stores of the tenant on that client,
    so each reads the others' buffered writes too, and their writes stay in order."""
    lanes = _LANES.setdefault(client, {})
    lane = lanes.get(scope)
    if lane is None:
        lane = lanes[scope] = WriteLane(client, scope)
        client.before_close(lane.publish_buffered)
    return lane
