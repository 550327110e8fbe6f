"""`MnemoStore`'s puts and deletes acknowledged once they are in the log (issue 30).

A put or a delete (a batch of nothing else) does not wait for the items group to apply it:
it returns once the broker has the items `write` request that carries it. That is enough for
read-your-writes, because every request of a store goes to the items topic keyed by the
tenant: one partition, which the items group answers one request at a time, in log order. A
`get`, `search` or listing the caller (or any other caller) makes after the put returned is
published after the write, so the group applies the write before it answers the read; a
delete reads as absent the same way. Concurrent puts and deletes of a key end as the log
orders them (the last one published wins), which is a serial order of the calls.

`WriteLane` publishes one write request of the store at a time: what comes while the items
group applies it waits, and goes in the next request (the last write of a key winning, in
submission order). Each request costs the group the same few database commands whatever it
holds (a read of its rows, a bulk write, a history insert), so under load the writes are
applied in big requests, and a read waits behind at most one of them; a write alone is
published at once. The reply comes later: an error in it (a write the group refused, or did
not apply before the request's deadline, `write_timeout`) is raised by the store's next call
(`check`), and `flush` waits until every write published so far is applied (what a reader
outside the items topic needs, such as pre_turn, which reads through the search group).

Until its client has had a first reply, a write waits to be applied, as before write-behind:
a fresh client's reply reader may deliver its first records only after it restarts (16 s,
`services.sdk.replies`), which a put's `write_timeout` absorbs and a read's timeout may not.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from schemas.item_writes import MAX_WRITES
from schemas.requests import ItemReply
from schemas.scope import Scope
from services.integrations.store_records import RECORD_KEY
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


@dataclass
class WriteLane:
    """The write-behind lane of one store (see the module docstring): `timeout` is the
    seconds a write request may wait to be applied (its deadline)."""

    client: MemoryClient
    scope: Scope
    timeout: float | None = None
    _waiting: list[tuple[Writes, asyncio.Future[None]]] = field(default_factory=list)
    _publisher: asyncio.Task[None] | None = None
    _applying: set[asyncio.Task[list[ItemReply]]] = field(default_factory=set)
    _failure: RequestFailed | None = None

    async def send(self, writes: Writes) -> None:
        """Return once the broker has `writes` (with whatever else waited meanwhile)."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((writes, done))
        if self._publisher is None or self._publisher.done():
            self._publisher = asyncio.get_running_loop().create_task(self._publish())
        await done

    async def _publish(self) -> None:
        while self._waiting:
            if self._applying:  # one write request of the store in the group's queue at a time
                await asyncio.wait(set(self._applying))
                continue
            taken, self._waiting = self._waiting, []
            merged: Writes = {}
            for writes, _ in taken:
                for item_id, write in writes.items():
                    merged.pop(item_id, None)  # the last write of a key wins, and goes last
                    merged[item_id] = write
            cold = self.client.reader_stats.replies == 0
            try:
                for chunk in chunks(merged):
                    applying = await self.client.write_items_logged(
                        self.scope, chunk, timeout=self.timeout
                    )
                    self._applying.add(applying)
                    applying.add_done_callback(self._applied)
                if cold and self._applying:  # the client's first reply (the module docstring)
                    await asyncio.wait(set(self._applying))
                    self.check()
            except Exception as exc:  # noqa: BLE001 - handed to every caller waiting
                for _, done in taken:
                    if not done.done():
                        done.set_exception(exc)
                continue
            for _, done in taken:
                if not done.done():
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

    async def flush(self) -> None:
        """Wait until every write published so far is applied (then `check`)."""
        while self._waiting or self._applying:
            if self._publisher is not None and not self._publisher.done():
                await asyncio.wait([self._publisher])
            if self._applying:
                await asyncio.wait(set(self._applying))
        self.check()
