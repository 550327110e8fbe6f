"""`RelationStore` on MongoDB: the `relations` collection, keyed by `relationId`. Typed
relations and the untyped, evidence-carrying links (`MENTIONS`, `RELATED`, issue 32) share
it; a link's sentence is its `metadata.evidence`."""

from __future__ import annotations

from collections.abc import Sequence

from pymongo import ASCENDING, DESCENDING
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError, PyMongoError

from engine.adapters.mongo.documents import Doc, scope_doc, scope_of, tenant_query
from engine.adapters.mongo.schema import RELATIONS
from engine.errors import DependencyFailed
from engine.records import RelationRecord
from engine.scoping import TenantFilter

AROUND_LIMIT = 500
"""Relations one read returns at most (`around`: the newest, returned oldest first)."""


def relation_of(d: Doc) -> RelationRecord:
    """The relation of a stored document."""
    return RelationRecord(
        relation_id=d["relationId"],
        scope=scope_of(d),
        source_id=d["sourceId"],
        source_name=d["sourceName"],
        type=d["type"],
        target_id=d["targetId"],
        target_name=d["targetName"],
        created_at=int(d["createdAt"]),
        metadata=dict(d.get("metadata") or {}),
        invalid_at=d.get("invalidAt"),
    )


class MongoRelationStore:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._col: AsyncCollection[Doc] = db[RELATIONS]

    async def insert_if_absent(self, relation: RelationRecord) -> bool:
        doc: Doc = {
            "_id": relation.relation_id,
            "relationId": relation.relation_id,
            **scope_doc(relation.scope),
            "sourceId": relation.source_id,
            "sourceName": relation.source_name,
            "type": relation.type,
            "targetId": relation.target_id,
            "targetName": relation.target_name,
            "createdAt": relation.created_at,
            "invalidAt": relation.invalid_at,
            "metadata": relation.metadata,
        }
        try:
            result = await self._col.update_one(
                {"_id": relation.relation_id}, {"$setOnInsert": doc}, upsert=True
            )
        except DuplicateKeyError:
            return False
        except PyMongoError as exc:
            raise DependencyFailed(f"relation insert failed: {exc}") from exc
        return result.upserted_id is not None

    async def around(self, where: TenantFilter, entity_ids: Sequence[str]) -> list[RelationRecord]:
        if not entity_ids:
            return []
        ids = list(entity_ids)
        newest = await self._find(
            {
                "$and": [
                    tenant_query(where),  # may hold a `$or` of its own: never merged into
                    {"$or": [{"sourceId": {"$in": ids}}, {"targetId": {"$in": ids}}]},
                ]
            },
            newest_first=True,
        )
        return newest[::-1]

    async def _find(self, query: Doc, *, newest_first: bool = False) -> list[RelationRecord]:
        """At most `AROUND_LIMIT` relations, oldest first; with `newest_first`, the newest
        ones, newest first (the user node links to every name the user mentioned: a long
        conversation passes the limit, and its newest links are the ones to keep)."""
        order = DESCENDING if newest_first else ASCENDING
        try:
            cursor = self._col.find(query).sort([("createdAt", order), ("_id", order)])
            docs = await cursor.to_list(AROUND_LIMIT)
        except PyMongoError as exc:
            raise DependencyFailed(f"relation read failed: {exc}") from exc
        return [relation_of(d) for d in docs]

    async def from_source(
        self, where: TenantFilter, source_id: str, type: str
    ) -> list[RelationRecord]:
        return await self._find({**tenant_query(where), "sourceId": source_id, "type": type})

    async def set_validity(self, relation_id: str, invalid_at: int | None) -> None:
        try:
            await self._col.update_one({"_id": relation_id}, {"$set": {"invalidAt": invalid_at}})
        except PyMongoError as exc:
            raise DependencyFailed(f"relation validity update failed: {exc}") from exc
