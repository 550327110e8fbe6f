"""The newest turns of the threads a search reads, kept in process and followed by deltas
(issue 28: after a write, the next read does work proportional to what changed).

The scene layer reads each recent thread's newest `SCENE_TURNS` (1,000) turns. Read whole
after every turn, a long thread cost the next pre_turn one document per turn: at 1,000
turns, 150-200 ms of the MongoDB-wire server on this machine. Here each thread's window is
kept with what its head said when it was read; the next read asks only for the turns at or
after the window's newest `at` less `AT_MARGIN_MS` (the `thread_at_seq` index). A turn
document never changes once written (its vector is its turn row's), so a held turn is never
read again.

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

from cachetools import LRUCache

from engine.adapters.mongo.documents import Doc, message_of
from engine.records import StoredMessage

AT_MARGIN_MS = 2_000
"""How far before the window's newest turn a delta looks. A thread's turns are stored in the
order they were published (one partition), each stamped with its publisher's clock: a turn
stamped earlier than this (another runtime's clock behind, a past time given) is not lost,
the count sends the read to the whole thread."""
RELOAD_SECONDS = 600.0
"""A window older than this is read whole again: whatever a delta could not see is not kept
longer."""
MAX_BYTES = 64 << 20
"""The windows' budget (estimated from their messages' text)."""
TURN_COUNT = "turns"
"""The head's count of the turns inserted into its thread (`$inc`, on insert only)."""


def order(doc: Doc) -> tuple[int, int, str]:
    """A turn's place in its thread: (`at`, `seq`, `_id`)."""
    return int(doc["at"]), int(doc.get("seq", 0)), str(doc["_id"])


def messages_of(doc: Doc) -> list[StoredMessage]:
    """A turn document's messages, in stored order."""
    return [message_of(m) for m in doc.get("messages", [])]


def weight(doc: Doc) -> int:
    """A turn document's estimated bytes: its messages' text and a fixed overhead."""
    return 256 + sum(len(str(m.get("content", ""))) for m in doc.get("messages", []))


class Window:
    """One thread's newest turns, kept in thread order (`order`) with their estimated bytes
    as running state: a delta's work is the turns it read, not the window's length."""

    __slots__ = ("count", "created_at", "docs", "loaded", "nbytes", "newest")

    def __init__(
        self, created_at: int, count: int, newest: int, docs: list[Doc], loaded: float
    ) -> None:
        self.created_at = created_at
        self.count = count
        """The head's `turns` when the window was last brought up to date."""
        self.newest = newest
        self.docs: dict[str, Doc] = {str(d["_id"]): d for d in sorted(docs, key=order)}
        """By id, in thread order (oldest first)."""
        self.loaded = loaded
        """When the window was last read whole (monotonic seconds)."""
        self.nbytes = sum(weight(d) for d in self.docs.values())

    def oldest(self) -> tuple[int, int, str]:
        return order(next(iter(self.docs.values()))) if self.docs else (0, 0, "")

    def since(self) -> int:
        if not self.docs:
            return -AT_MARGIN_MS
        return int(next(reversed(self.docs.values()))["at"]) - AT_MARGIN_MS

    def update(self, found: list[Doc]) -> None:
        """Take the delta's turns (new ones, or newer copies of held ones), keep thread
        order, and let the oldest go beyond `newest`."""
        last = order(next(reversed(self.docs.values()))) if self.docs else None
        resort = False
        for doc in sorted(found, key=order):
            key = str(doc["_id"])
            held = self.docs.get(key)
            if held is not None:
                self.nbytes -= weight(held)  # a newer copy keeps its place
            elif last is not None and order(doc) < last:
                resort = True  # a new turn among the held ones (within the margin)
            self.docs[key] = doc
            self.nbytes += weight(doc)
        if resort:
            self.docs = {str(d["_id"]): d for d in sorted(self.docs.values(), key=order)}
        while len(self.docs) > self.newest:
            self.nbytes -= weight(self.docs.pop(next(iter(self.docs))))


Reader = Callable[[Doc, int | None], Awaitable[list[Doc]]]
"""(query, newest) → turn documents: the store's own read (`newest`: the newest that many)."""


class TurnWindows:
    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self._windows: LRUCache[str, Window] = LRUCache(
            maxsize=max_bytes, getsizeof=lambda w: max(1, w.nbytes)
        )
        # the same budget again: mostly the windows' own documents (shared, not copied)
        self._read: LRUCache[int, tuple[Doc, list[StoredMessage]]] = LRUCache(
            maxsize=max_bytes, getsizeof=lambda held: weight(held[0])
        )
        self.deltas = 0
        self.loads = 0

    def messages(self, doc: Doc) -> list[StoredMessage]:
        """A turn document's messages, read once per document object: a window hands the
        same held documents to request after request, and reading 2,000 messages again
        was a third of a request's work right after a write to a 1,000-turn thread. Kept
        by the object (`is`, not its `_id`: a newer copy is read anew, and the object is
        held, so its `id` is not reused while kept)."""
        held = self._read.get(id(doc))
        if held is not None and held[0] is doc:
            return held[1]
        read = messages_of(doc)
        self._read[id(doc)] = (doc, read)
        return read

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
            self._keep(key, Window(created, count, newest, docs, time.monotonic()))
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
        # a turn older than the window's oldest is one it let go (trimmed), or a new one
        # stamped too early to place: then the count tells, and the thread is read whole
        oldest = window.oldest()
        found = [d for d in found if order(d) >= oldest]
        added = {str(d["_id"]) for d in found} - window.docs.keys()
        if window.count + len(added) != count:
            self._windows.pop(key, None)
            return None  # a turn the delta cannot see: read the thread whole
        window.update(found)
        window.count = count
        self._keep(key, window)  # weighed again: it grew
        self.deltas += 1
        return list(window.docs.values())
