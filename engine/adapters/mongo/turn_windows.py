"""The newest turns of the threads a search reads, kept in process and followed by deltas
(issue 28: after a write, the next read does work proportional to what changed).

The scene layer reads each recent thread's newest `SCENE_TURNS` (1,000) turns. Read whole
after every turn, a long thread cost the next pre_turn one document per turn: at 1,000
turns, 150-200 ms of the MongoDB-wire server on this machine. Here each thread's window is
kept with what its head said when it was read; the next read asks only for

* the turns at or after the window's newest `at` less `AT_MARGIN_MS` (the `thread_at_seq`
  index),
* and the window's newest turns still without a vector (filled by the embeddings stage
  after the turn was stored), by `_id`.

A window is trusted only while the head's turn count (`turns`, incremented by the writer for
the turns it inserted, never for a redelivered one) equals the window's count plus the new
turns the delta found, and the head's `createdAt` is the window's (an erased and re-created
thread starts anew). Anything else — a turn stamped earlier than the margin, a head without
a count (written before this layout), a crash between a turn's insert and its head's
increment — reads the thread whole, as before, and so does a window older than
`RELOAD_SECONDS`. The windows are bounded by their estimated bytes, least recently read
first out."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from cachetools import LRUCache

from engine.adapters.mongo.documents import Doc

AT_MARGIN_MS = 2_000
"""How far before the window's newest turn a delta looks. A thread's turns are stored in the
order they were published (one partition), each stamped with its publisher's clock: a turn
stamped earlier than this (another runtime's clock behind, a past time given) is not lost,
the count sends the read to the whole thread."""
PENDING_TURNS = 32
"""The newest turns whose vector a delta looks for (the embedding stage fills a turn's
vector seconds after it is stored; a turn it never fills is not read again and again)."""
RELOAD_SECONDS = 600.0
"""A window older than this is read whole again: whatever a delta could not see (a vector
filled for a turn the window no longer tracks as pending) is not kept longer."""
MAX_BYTES = 64 << 20
"""The windows' budget (estimated from their messages' text)."""
TURN_COUNT = "turns"
"""The head's count of the turns inserted into its thread (`$inc`, on insert only)."""


def order(doc: Doc) -> tuple[int, int, str]:
    """A turn's place in its thread: (`at`, `seq`, `_id`)."""
    return int(doc["at"]), int(doc.get("seq", 0)), str(doc["_id"])


@dataclass(slots=True)
class Window:
    created_at: int
    count: int
    """The head's `turns` when the window was last brought up to date."""
    newest: int
    docs: dict[str, Doc]
    loaded: float
    """When the window was last read whole (monotonic seconds)."""

    @property
    def nbytes(self) -> int:
        return sum(
            256 + sum(len(str(m.get("content", ""))) for m in d.get("messages", []))
            for d in self.docs.values()
        )

    def since(self) -> int:
        return max((int(d["at"]) for d in self.docs.values()), default=0) - AT_MARGIN_MS

    def pending(self, since: int) -> list[str]:
        """Of the window's newest `PENDING_TURNS` turns, those older than `since` still
        without their vector (an older one waits for the window's reload)."""
        newest = sorted(self.docs.values(), key=order)[-PENDING_TURNS:]
        return [str(d["_id"]) for d in newest if "vector" not in d and int(d["at"]) < since]

    def trim(self) -> None:
        if len(self.docs) > self.newest:
            kept = sorted(self.docs.values(), key=order)[-self.newest :]
            self.docs = {str(d["_id"]): d for d in kept}


Reader = Callable[[Doc, int | None], Awaitable[list[Doc]]]
"""(query, newest) → turn documents: the store's own read (`newest`: the newest that many)."""


class TurnWindows:
    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self._windows: LRUCache[str, Window] = LRUCache(
            maxsize=max_bytes, getsizeof=lambda w: max(1, w.nbytes)
        )
        self.deltas = 0
        self.loads = 0

    async def newest(self, head: Doc, newest: int, read: Reader) -> list[Doc]:
        """The thread's newest `newest` turn documents, as `read({"thread": …}, newest)`
        would return them, read by a delta when the thread's window is current."""
        key = str(head["_id"])
        count, created = head.get(TURN_COUNT), int(head.get("createdAt", 0))
        window = self._windows.get(key)
        if (
            window is not None
            and isinstance(count, int)
            and window.created_at == created
            and window.newest == newest
            and time.monotonic() - window.loaded < RELOAD_SECONDS
        ):
            docs = await self._delta(window, key, count, read)
            if docs is not None:
                return docs
        docs = await read({"thread": key}, newest)
        if isinstance(count, int) and newest > 0:
            by_id = {str(d["_id"]): d for d in docs}
            self._keep(key, Window(created, count, newest, by_id, time.monotonic()))
            self.loads += 1
        return docs

    def _keep(self, key: str, window: Window) -> None:
        try:
            self._windows[key] = window
        except ValueError:  # larger than the whole budget: not kept
            self._windows.pop(key, None)

    async def _delta(self, window: Window, key: str, count: int, read: Reader) -> list[Doc] | None:
        since = window.since()
        found = list(await read({"thread": key, "at": {"$gte": since}}, None))
        pending = window.pending(since)
        if pending:
            found += await read({"_id": {"$in": pending}}, None)
        # a turn older than the window's oldest is one it let go (trimmed), or a new one
        # stamped too early to place: then the count tells, and the thread is read whole
        oldest = min((order(d) for d in window.docs.values()), default=(0, 0, ""))
        found = [d for d in found if order(d) >= oldest]
        added = {str(d["_id"]) for d in found} - window.docs.keys()
        if window.count + len(added) != count:
            self._windows.pop(key, None)
            return None  # a turn the delta cannot see: read the thread whole
        window.docs.update({str(d["_id"]): d for d in found})
        window.count = count
        window.trim()
        self._keep(key, window)  # weighed again: it grew
        self.deltas += 1
        return list(window.docs.values())
