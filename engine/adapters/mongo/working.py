"""`WorkingStore` on MongoDB: the working buffer of each thread in the `sessions`
collection (`_id` is `ScopeFields.document_key`), appended once per turn (`append_once`).
One adapter for the one document: the reads and edits of the sessions API
(`engine.upkeep.sessions.SessionStore`) are inherited from `MongoSessionStore`, and the runtime
hands the same object to both ports."""

from __future__ import annotations

from collections.abc import Sequence

from pymongo import DESCENDING
from pymongo.errors import PyMongoError

from engine.adapters.mongo.batches import first_per_document, versioned_upserts
from engine.adapters.mongo.documents import (
    Doc,
    append_once,
    as_date,
    scope_doc,
    scope_of,
    tenant_query,
)
from engine.adapters.mongo.sessions import MongoSessionStore
from engine.errors import DependencyFailed
from engine.records import WORKING_TURN_ROWS, WorkingAppend, WorkingBuffer, turn_row_id
from engine.scoping import TenantFilter

WORKING_TURN_IDS_KEPT = 1000
"""Turn ids remembered per working buffer for idempotency (older redeliveries re-append)."""


class MongoWorkingStore(MongoSessionStore):
    async def append(self, lines: WorkingAppend, keep: int) -> bool:
        key = lines.scope.document_key(lines.session_id)
        update = _update([lines], keep)
        return await append_once(self._col, key, lines.turn_id, update, "working append")

    async def append_many(self, appends: Sequence[WorkingAppend], keep: int) -> list[bool]:
        groups = first_per_document(
            appends, lambda a: a.scope.document_key(a.session_id), lambda a: a.turn_id
        )
        updates = {
            key: ([appends[i].turn_id for i in ix], _update([appends[i] for i in ix], keep))
            for key, ix in groups.items()
        }
        failed = await versioned_upserts(self._col, updates, "working append")
        applied = [False] * len(appends)
        for key, ix in groups.items():
            for i in ix:
                # a buffer whose guard failed is replayed append by append, in order
                applied[i] = await self.append(appends[i], keep) if key in failed else True
        return applied

    async def recent(self, where: TenantFilter, limit: int) -> list[WorkingBuffer]:
        try:
            cursor = (
                self._col.find(tenant_query(where), {"turnIds": 0})
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


def _update(appends: Sequence[WorkingAppend], keep: int) -> Doc:
    """One update appending `appends` (of one buffer, in order) as consecutive `append`s
    would: the newest `keep` lines, turn ids and turn rows capped, state merged (later keys
    win), the times widened."""
    first = appends[0]
    rows = [a.row_id for a in appends if a.row_id]
    update: Doc = {
        "$push": {
            "workingMemory.context": {
                "$each": [line for a in appends for line in a.lines],
                "$slice": -keep,
            },
            "turnIds": {"$each": [a.turn_id for a in appends], "$slice": -WORKING_TURN_IDS_KEPT},
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
        "$inc": {"rev": 1},  # the revision `versioned_upserts` guards a batch's write by
        "$max": {
            "lastAccessedAt": max(a.at for a in appends),
            "expiresAt": as_date(max(a.expires_at for a in appends)),
        },
    }
    state: Doc = {}
    for a in appends:
        state.update({f"workingMemory.state.{k}": v for k, v in a.state.items()})
    if state:
        update["$set"] = state
    return update
