"""A tenant's stored rows as versioned JSON lines (issue 31: `mnemostream export`, the
gateway's `GET /api/memory/export`), read from MongoDB page by page.

**Format** (`FORMAT`, `VERSION`). The first line is a header: `{"format":
"mnemostream.tenant-export", "version": 1, "scope": {"agentWallet", "userAddress"},
"exportedAt": ISO-8601 UTC, "kinds": [...]}`. Every other line is one stored document,
`{"kind": K, "row": {...}}`, as MongoDB holds it, in MongoDB Extended JSON v2 (relaxed: a date
is `{"$date": ...}`, bytes `{"$binary": ...}`), so `bson.json_util.loads` gives back the same
document, `_id` included: nothing is decoded, re-sealed or re-embedded on the way (an archive
sealed at rest stays sealed, a vector keeps its model's bits).
The last line, `{"end": true, "rows": N}`, says the export is complete and how many rows it
holds: a file cut short has none.

**Kinds** (`KINDS`), in the order written: the collections an erasure empties for a user
(`engine.adapters.mongo.erasure.COLLECTIONS`, the one list of where a tenant's rows are),
with a transcript's turns right after their heads (a turn names its thread, not its tenant:
found through the tenant's heads, as an erasure finds them) and the item history
(`memory_history`, whose texts an erasure silences) last.

**Confinement.** Every query names the tenant: `agentWallet` equal to the agent and, when a
user is given, `userAddress` equal to it (the agent's user-less rows and other users' rows do
not match); without a user every row of the agent is read. Turns are read only by the
`thread` keys of the tenant's own heads.

**Pages.** `page` reads at most `max_rows` documents and about `max_chars` characters (at
least one document), in `_id` order within a kind, and returns the cursor of the next page
(JSON, so a request can carry it): a page is a bounded read, and an export of any size is
streamed, never held in memory.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bson import json_util
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import PyMongoError

from engine.adapters.mongo.documents import Doc
from engine.adapters.mongo.erasure import COLLECTIONS
from engine.adapters.mongo.schema import HISTORY, TRANSCRIPT_TURNS, TRANSCRIPTS
from engine.errors import DependencyFailed, InputRejected

FORMAT = "mnemostream.tenant-export"
VERSION = 1
"""The version of the line format; an import refuses any other."""

TURNS = "transcript_turns"
MEMORY_KIND = "memory"
KINDS: Mapping[str, str] = {
    "transcripts": TRANSCRIPTS,
    TURNS: TRANSCRIPT_TURNS,
    **{kind: name for kind, name in COLLECTIONS.items() if kind != "transcripts"},
    "history": HISTORY,
}
"""Kind → collection, in the order an export writes them."""

WRITE = json_util.RELAXED_JSON_OPTIONS
READ = json_util.JSONOptions(json_mode=json_util.JSONMode.RELAXED, tz_aware=True, tzinfo=UTC)
MAX_ROWS = 200
MAX_CHARS = 256_000
"""A page's default bounds: well under a Kafka record's 1 MB when a page is a reply."""

Cursor = dict[str, Any]
"""Where the next page starts: `{"kind": K, "after": <last _id, Extended JSON>, "rows": rows
written so far}` and, for turns, `"thread"` (the head whose turns are being read). None: the
first page (with the header)."""


def header(agent: str, user: str | None, exported_at: datetime) -> str:
    """The first line of an export."""
    return json_util.dumps(
        {
            "format": FORMAT,
            "version": VERSION,
            "scope": {"agentWallet": agent, "userAddress": user},
            "exportedAt": exported_at.astimezone(UTC).isoformat(),
            "kinds": list(KINDS),
        }
    )


def trailer(rows: int) -> str:
    """The last line of a complete export: how many rows it holds (a file cut short, by a
    failed stream or a full disk, has none, and an import refuses it)."""
    return json_util.dumps({"end": True, "rows": rows})


def line(kind: str, row: Doc) -> str:
    """One stored document as an export line."""
    return json_util.dumps({"kind": kind, "row": row}, json_options=WRITE)


def parse_line(text: str) -> dict[str, Any]:
    """An export line back as a document (Extended JSON decoded: dates aware, in UTC)."""
    parsed: dict[str, Any] = json_util.loads(text, json_options=READ)
    return parsed


def _id_json(value: Any) -> Any:
    """An `_id` as plain JSON (a cursor travels in a request)."""
    return json_util.loads(json_util.dumps(value, json_options=WRITE))


def _id_of(value: Any) -> Any:
    return json_util.loads(json_util.dumps(value), json_options=READ)


@dataclass(frozen=True, slots=True)
class Page:
    lines: list[str]
    next: Cursor | None
    """None: the export is complete."""


class MongoTenantExport:
    """Reads one tenant's stored documents as export lines (see the module docstring)."""

    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._db = db

    async def lines(
        self, agent: str, user: str | None, exported_at: datetime
    ) -> AsyncIterator[str]:
        """Every line of the tenant's export, header first, page by page."""
        cursor: Cursor | None = None
        while True:
            page = await self.page(agent, user, cursor, exported_at=exported_at)
            for text in page.lines:
                yield text
            if page.next is None:
                return
            cursor = page.next

    async def page(
        self,
        agent: str,
        user: str | None,
        cursor: Mapping[str, Any] | None,
        *,
        exported_at: datetime,
        max_rows: int = MAX_ROWS,
        max_chars: int = MAX_CHARS,
    ) -> Page:
        """The lines from `cursor` (None: the header, then the first rows) and the cursor
        after them. `InputRejected` for an empty agent or a cursor naming no kind."""
        if not agent.strip():
            raise InputRejected("agentWallet is required")
        tenant: Doc = {"agentWallet": agent}
        if user is not None:
            tenant["userAddress"] = user
        out = _Filling(max_rows, max_chars)
        if cursor is None:
            out.add(header(agent, user, exported_at))
            cursor = {"kind": next(iter(KINDS))}
        before = int(cursor.get("rows") or 0) - (1 if out.lines else 0)
        kinds = list(KINDS)
        first = str(cursor.get("kind"))
        if first not in KINDS:
            raise InputRejected(f"export cursor names no kind: {first!r}")
        after = _id_of(cursor["after"]) if cursor.get("after") is not None else None
        thread = cursor.get("thread")
        try:
            for kind in kinds[kinds.index(first) :]:
                if kind == TURNS:
                    stopped = await self._turns(tenant, out, thread, after)
                else:
                    stopped = await self._rows(kind, tenant, out, after)
                if stopped is not None:
                    return Page(out.lines, {**stopped, "rows": before + len(out.lines)})
                after, thread = None, None
        except PyMongoError as exc:
            raise DependencyFailed(f"reading the tenant's export failed: {exc}") from exc
        return Page([*out.lines, trailer(before + len(out.lines))], None)

    async def _rows(self, kind: str, tenant: Doc, out: _Filling, after: Any) -> Cursor | None:
        """Fill `out` with the kind's rows after `after`; the cursor where it stopped."""
        query = dict(tenant) if after is None else {**tenant, "_id": {"$gt": after}}
        while True:
            room = out.room()
            if room == 0:
                return {"kind": kind, "after": _id_json(after)}
            docs = await self._db[KINDS[kind]].find(query).sort("_id", 1).to_list(room)
            for doc in docs:
                if not out.add(line(kind, doc)):
                    return {"kind": kind, "after": _id_json(after)}
                after = doc["_id"]
            if len(docs) < room:
                return None
            query = {**tenant, "_id": {"$gt": after}}

    async def _turns(
        self, tenant: Doc, out: _Filling, thread: str | None, after: Any
    ) -> Cursor | None:
        """Fill `out` with the turns of the tenant's threads (by their heads), from `thread`."""
        heads = await self._db[TRANSCRIPTS].find(tenant, {"_id": 1}).to_list(None)
        for key in sorted(str(h["_id"]) for h in heads):
            if thread is not None and key < thread:
                continue
            start = after if key == thread else None
            while True:
                room = out.room()
                if room == 0:
                    return {"kind": TURNS, "thread": key, "after": _id_json(start)}
                query: Doc = {"thread": key}
                if start is not None:
                    query["_id"] = {"$gt": start}
                docs = await self._db[TRANSCRIPT_TURNS].find(query).sort("_id", 1).to_list(room)
                for doc in docs:
                    if not out.add(line(TURNS, doc)):
                        return {"kind": TURNS, "thread": key, "after": _id_json(start)}
                    start = doc["_id"]
                if len(docs) < room:
                    break
        return None


class _Filling:
    """A page being filled: rows and characters left."""

    def __init__(self, max_rows: int, max_chars: int) -> None:
        self.lines: list[str] = []
        self._rows = max(1, max_rows)
        self._chars = max_chars
        self._used = 0

    def room(self) -> int:
        return self._rows - len(self.lines)

    def add(self, text: str) -> bool:
        """Take `text` unless the page is full (an empty page takes any one line)."""
        if self.lines and (self.room() <= 0 or self._used + len(text) > self._chars):
            return False
        self.lines.append(text)
        self._used += len(text)
        return True
