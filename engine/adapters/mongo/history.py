"""`ItemHistory` on MongoDB: the `memory_history` collection, one document per change, its
`_id` the change id (so recording a change again inserts nothing), with the item's tenant
fields, so a read is filtered by `tenant_query` like the items themselves.

`seq` (an ObjectId made when the change is recorded) orders changes of the same `at`: it
grows within a process, and across processes with the second it was made. Driver errors
become `DependencyFailed`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bson import ObjectId
from pymongo import DESCENDING
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import PyMongoError

from engine.adapters.mongo.batches import insert_ignoring_duplicates
from engine.adapters.mongo.documents import Doc, scope_doc, scope_of, tenant_query
from engine.adapters.mongo.schema import HISTORY
from engine.errors import DependencyFailed
from engine.history import SPOKEN_DETAILS
from engine.records import Cause, ItemChange
from engine.scoping import TenantFilter

SILENCED: Doc = {
    "$set": {"oldContent": None, "newContent": None, "details.forgotten": True},
    "$unset": {f"details.{key}": "" for key in SPOKEN_DETAILS},
}
"""The update that erases what changes said (texts, spoken details), keeping what happened:
a hard delete's and an erasure's (`engine.history`)."""


def change_document(change: ItemChange) -> Doc:
    """The stored form of a change."""
    return {
        "_id": change.change_id,
        "itemId": change.item_id,
        **scope_doc(change.scope),
        "kind": change.kind,
        "at": change.at,
        "seq": ObjectId(),
        "cause": {"kind": change.cause.kind, "id": change.cause.id, "name": change.cause.name},
        "actor": change.cause.actor,
        "oldContent": change.old_content,
        "newContent": change.new_content,
        "details": change.details,
    }


def change_of(doc: Mapping[str, Any]) -> ItemChange:
    """The change of a stored document (the inverse of `change_document`)."""
    cause = doc.get("cause") or {}
    return ItemChange(
        change_id=str(doc["_id"]),
        item_id=doc["itemId"],
        scope=scope_of(doc),
        kind=doc["kind"],
        at=int(doc["at"]),
        cause=Cause(
            kind=str(cause.get("kind", "")),
            id=str(cause.get("id", "")),
            name=str(cause.get("name", "")),
            actor=str(doc.get("actor", "")),
        ),
        old_content=doc.get("oldContent"),
        new_content=doc.get("newContent"),
        details=dict(doc.get("details") or {}),
    )


class MongoItemHistory:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._col: AsyncCollection[Doc] = db[HISTORY]

    async def record(self, changes: Sequence[ItemChange]) -> None:
        # the first of a repeated id wins, as with consecutive records
        first = {c.change_id: c for c in reversed(changes)}
        docs = [change_document(first[i]) for i in dict.fromkeys(c.change_id for c in changes)]
        await insert_ignoring_duplicates(self._col, docs, "item history record")

    async def of_item(self, where: TenantFilter, item_id: str, limit: int) -> list[ItemChange]:
        if limit < 1:
            return []
        query = {**tenant_query(where.exact()), "itemId": item_id}
        try:
            cursor = self._col.find(query).sort([("at", DESCENDING), ("seq", DESCENDING)])
            docs = await cursor.limit(limit).to_list(length=limit)
        except PyMongoError as exc:
            raise DependencyFailed(f"item history read failed: {exc}") from exc
        return [change_of(d) for d in reversed(docs)]

    async def forget(self, where: TenantFilter, item_ids: Sequence[str]) -> int:
        if not item_ids:
            return 0
        query = {**tenant_query(where.exact()), "itemId": {"$in": list(dict.fromkeys(item_ids))}}
        try:
            result = await self._col.update_many(query, SILENCED)
        except PyMongoError as exc:
            raise DependencyFailed(f"item history erase failed: {exc}") from exc
        return result.modified_count
