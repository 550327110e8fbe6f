"""`SessionStore` on MongoDB: the `sessions` documents post_turn appends to
(`MongoWorkingStore`), addressed by `sessionId` within a tenant filter (`tenant_query`), so a
session outside the caller's scope matches nothing.

Reads and edits are one `find_one_and_update` each (newest `lastAccessedAt` first when the
tenant has several documents with the id), whose update only touches the parts given:
merged context lines with `$push … $slice`, merged objects key by key with `$set`, so an
edit racing a turn's append loses neither. Driver errors become `DependencyFailed`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pymongo import DESCENDING, ReturnDocument
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import PyMongoError

from engine.adapters.mongo.documents import Doc, as_date, scope_of, tenant_query
from engine.adapters.mongo.schema import SESSIONS
from engine.errors import DependencyFailed
from engine.scoping import TenantFilter
from engine.upkeep.sessions import SessionDocument, SessionEdit

_HIDDEN: Doc = {
    "turnIds": 0,
    "guard": 0,
    "workingMemory.vectors": 0,
    "workingMemory.rows": 0,
}
"""Internal fields never returned: the idempotence guard's turn ids and times, the newest
turns' rows (and their embeddings, as an older build kept them)."""


def _ms(value: Any) -> int | None:
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return int(moment.timestamp() * 1000)
    return int(value) if isinstance(value, int | float) else None


def session_of(doc: Doc) -> SessionDocument:
    """The session of a stored `sessions` document."""
    memory = doc.get("workingMemory") or {}
    return SessionDocument(
        session_id=doc["sessionId"],
        scope=scope_of(doc),
        context=list(memory.get("context") or []),
        entities=dict(memory.get("entities") or {}),
        state=dict(memory.get("state") or {}),
        metadata=dict(doc.get("metadata") or {}),
        created_at=_ms(doc.get("createdAt")) or 0,
        last_accessed_at=_ms(doc.get("lastAccessedAt")) or 0,
        expires_at=_ms(doc.get("expiresAt")),
        compressed=bool(doc.get("compressed", False)),
    )


def edit_update(edit: SessionEdit) -> Doc:
    """The update document of an edit (see `SessionEdit`)."""
    sets: Doc = {}
    update: Doc = {
        "$max": {"lastAccessedAt": edit.at, "expiresAt": as_date(edit.at + edit.ttl_ms)},
    }
    if edit.context is not None:
        if edit.replace:
            sets["workingMemory.context"] = list(edit.context)
        else:
            update["$push"] = {
                "workingMemory.context": {"$each": list(edit.context), "$slice": -edit.keep}
            }
    for name, path in (
        ("entities", "workingMemory.entities"),
        ("state", "workingMemory.state"),
        ("metadata", "metadata"),
    ):
        given = getattr(edit, name)
        if given is None:
            continue
        if edit.replace:
            sets[path] = dict(given)
        else:
            sets.update({f"{path}.{k}": v for k, v in given.items()})
    if sets:
        update["$set"] = sets
    return update


class MongoSessionStore:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._col: AsyncCollection[Doc] = db[SESSIONS]

    @staticmethod
    def _query(where: TenantFilter, session_id: str) -> Doc:
        # sessions never widen to the agent's user-less documents (`shared`)
        return {**tenant_query(where.exact()), "sessionId": session_id}

    async def _update(self, where: TenantFilter, session_id: str, update: Doc) -> Doc | None:
        try:
            return await self._col.find_one_and_update(
                self._query(where, session_id),
                update,
                projection=_HIDDEN,
                sort=[("lastAccessedAt", DESCENDING)],
                return_document=ReturnDocument.AFTER,
            )
        except PyMongoError as exc:
            raise DependencyFailed(f"working session update failed: {exc}") from exc

    async def touch(self, where: TenantFilter, session_id: str, at: int) -> SessionDocument | None:
        doc = await self._update(where, session_id, {"$max": {"lastAccessedAt": at}})
        return None if doc is None else session_of(doc)

    async def edit(
        self, where: TenantFilter, session_id: str, edit: SessionEdit
    ) -> SessionDocument | None:
        doc = await self._update(where, session_id, edit_update(edit))
        return None if doc is None else session_of(doc)
