"""`WorkingStore` on MongoDB: the working buffer of each thread in the `sessions`
collection (`_id` is `ScopeFields.document_key`), appended once per turn. One adapter for the
one document: the reads and edits of the sessions API (`engine.upkeep.sessions.SessionStore`)
are inherited from `MongoSessionStore`, and the runtime hands the same object to both ports.

A batch reads each buffer's guard (`engine.turn_guard`) and revision, decides which turns it
takes as consecutive appends would, and writes each buffer once, guarded by the revision it
read (`batches.guarded_upserts`). A buffer that changed in between is read and decided
again.

The guard is stored as one JSON string (`guard_doc`): as arrays of 64 ids and 64 times in
milliseconds, the MongoDB-wire server here took five times as long to read it and three
times as long to write it (an ad-hoc probe, stop 48: 33 ms against 6 to read 50 buffers'
guards, 1.2 ms against 0.33 to update one)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from pymongo import DESCENDING
from pymongo.errors import PyMongoError

from engine.adapters.mongo.batches import first_per_document, guarded_upserts
from engine.adapters.mongo.documents import Doc, as_date, scope_doc, scope_of, tenant_query
from engine.adapters.mongo.sessions import MongoSessionStore
from engine.errors import DependencyFailed
from engine.records import WORKING_TURN_ROWS, WorkingAppend, WorkingBuffer, turn_row_id
from engine.scoping import TenantFilter
from engine.turn_guard import GUARD_IDS, TurnGuard

WORKING_TURN_IDS_KEPT = GUARD_IDS
"""Turn ids (and their times) a working buffer keeps for its guard (`engine.turn_guard`)."""
GUARD_READS = 100
"""Times a batch reads a buffer that keeps changing between its read and its write. A
guarded write fails only because another append to the buffer succeeded in between, so N
appends racing on one buffer all land within N reads each (a thread's turns normally have
one writer: its partition's)."""
_GUARD = {"guard": 1, "rev": 1}
_LEGACY = {"turnIds": 1, "lastAccessedAt": 1}
"""What a buffer written before the guard holds instead: its ids, and its latest time."""


class MongoWorkingStore(MongoSessionStore):
    async def append(self, lines: WorkingAppend, keep: int) -> bool:
        [applied] = await self.append_many([lines], keep)
        return applied

    async def append_many(self, appends: Sequence[WorkingAppend], keep: int) -> list[bool]:
        groups = first_per_document(
            appends, lambda a: a.scope.document_key(a.session_id), lambda a: a.turn_id
        )
        applied = [False] * len(appends)
        if not groups:
            return applied
        for _ in range(GUARD_READS):
            guards = await self._guards(list(groups))
            writes: dict[str, tuple[object, Doc]] = {}
            taken: dict[str, list[int]] = {}
            for key, ix in groups.items():
                guard, rev, legacy = guards.get(key, (TurnGuard(), None, False))
                picked, after = guard.take([(appends[i].turn_id, appends[i].at) for i in ix])
                if picked:
                    taken[key] = [ix[p] for p in picked]
                    update = _update([appends[i] for i in taken[key]], keep, after, legacy)
                    writes[key] = ({"$exists": False} if rev is None else rev, update)
            failed = await guarded_upserts(self._col, writes, "working append")
            for key in taken.keys() - failed:
                for i in taken[key]:
                    applied[i] = True
            groups = {k: groups[k] for k in failed}
            if not groups:
                return applied
        raise DependencyFailed(
            f"working append failed: {len(groups)} buffer(s) changed between each of "
            f"{GUARD_READS} reads and the write"
        )

    async def _guards(self, keys: list[str]) -> dict[str, tuple[TurnGuard, object, bool]]:
        """Each buffer's guard, revision, and whether it holds an older build's ids."""
        try:
            held = await self._col.find({"_id": {"$in": keys}}, _GUARD).to_list(None)
            legacy = [d["_id"] for d in held if "guard" not in d]
            older = (
                await self._col.find({"_id": {"$in": legacy}}, _LEGACY).to_list(None)
                if legacy
                else []
            )
        except PyMongoError as exc:
            raise DependencyFailed(f"working append failed: {exc}") from exc
        guards = {str(d["_id"]): (guard_of(d.get("guard")), d.get("rev"), False) for d in held}
        for d in older:
            ids = [str(t) for t in d.get("turnIds") or []]
            at = int(d.get("lastAccessedAt", 0))
            guards[str(d["_id"])] = (TurnGuard.legacy(ids, at), guards[str(d["_id"])][1], True)
        return guards

    async def recent(self, where: TenantFilter, limit: int) -> list[WorkingBuffer]:
        try:
            cursor = (
                self._col.find(tenant_query(where), {"turnIds": 0, "guard": 0})
                .sort("lastAccessedAt", DESCENDING)
                .limit(limit)
            )
            docs = await cursor.to_list(length=limit)
        except PyMongoError as exc:
            raise DependencyFailed(f"working read failed: {exc}") from exc
        out: list[WorkingBuffer] = []
        for d in docs:
            memory = d.get("workingMemory") or {}
            out.append(
                WorkingBuffer(
                    session_id=d["sessionId"],
                    scope=scope_of(d),
                    lines=list(reversed(memory.get("context") or [])),
                    state=dict(memory.get("state") or {}),
                    last_accessed_at=int(d["lastAccessedAt"]),
                    created_at=int(d["createdAt"]),
                    turn_rows=_turn_rows(d, memory),
                )
            )
        return out


def _turn_rows(doc: Doc, memory: Doc) -> list[str]:
    """The buffer's newest turn rows, oldest first. A buffer written by an older build holds
    its turns' vectors instead (`workingMemory.vectors`): their turn ids, in the thread's
    last session, name the same rows."""
    rows = memory.get("rows")
    if rows is not None:
        return [str(r) for r in rows]
    session = (memory.get("state") or {}).get("lastSessionId")
    if not isinstance(session, str):
        return []
    agent = str(doc.get("agentWallet", ""))
    return [
        turn_row_id(agent, session, str(v["turnId"]))
        for v in memory.get("vectors") or []
        if isinstance(v, dict) and "turnId" in v
    ][-WORKING_TURN_ROWS:]


def _update(
    appends: Sequence[WorkingAppend], keep: int, guard: TurnGuard, legacy: bool = False
) -> Doc:
    """One update appending `appends` (of one buffer, in order) as consecutive `append`s
    would: the newest `keep` lines and turn rows capped, the guard after them (`guard`)
    written whole, state merged (later keys win), the times widened."""
    first = appends[0]
    # only what the `$slice` keeps is sent: a batch of 40 turns of one thread pushed 80 lines
    # for the server to copy and drop (issue 29)
    lines = _newest([line for a in appends for line in a.lines], keep)
    rows = _newest([a.row_id for a in appends if a.row_id], WORKING_TURN_ROWS)
    update: Doc = {
        "$push": {
            "workingMemory.context": {"$each": lines, "$slice": -keep},
            **(
                {"workingMemory.rows": {"$each": rows, "$slice": -WORKING_TURN_ROWS}}
                if rows
                else {}
            ),
        },
        "$setOnInsert": {
            "sessionId": first.session_id,
            "compressed": False,
            **scope_doc(first.scope),
        },
        "$min": {"createdAt": min(a.at for a in appends)},
        "$inc": {"rev": 1},  # the revision `guarded_upserts` guards a batch's write by
        "$max": {
            "lastAccessedAt": max(a.at for a in appends),
            "expiresAt": as_date(max(a.expires_at for a in appends)),
        },
    }
    sets: Doc = {"guard": guard_doc(guard)}
    for a in appends:
        sets.update({f"workingMemory.state.{k}": v for k, v in a.state.items()})
    update["$set"] = sets
    if legacy:
        update["$unset"] = {"turnIds": ""}  # an older build's 1,000 ids: the guard replaces them
    return update


def _newest(items: list[str], keep: int) -> list[str]:
    """The last `keep` of `items` (none for `keep` <= 0), as `$slice: -keep` keeps them."""
    return items[-keep:] if keep > 0 else []


def guard_doc(guard: TurnGuard) -> str:
    """A guard as the buffer stores it."""
    return json.dumps({"ids": guard.ids, "ats": guard.ats, "floor": guard.floor})


def guard_of(stored: str | None) -> TurnGuard:
    """The guard a buffer stored (`guard_doc`); an empty one for none."""
    if not stored:
        return TurnGuard()
    doc = json.loads(stored)
    floor = doc.get("floor")
    return TurnGuard(
        tuple(str(t) for t in doc.get("ids") or ()),
        tuple(int(a) for a in doc.get("ats") or ()),
        None if floor is None else int(floor),
    )
