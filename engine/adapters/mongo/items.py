"""`ItemStore` on MongoDB: single rows of the `memory` collection, addressed by `_id` within
a tenant filter (`tenant_query`), so an id outside the caller's scope matches nothing.

Every write is one `find_one_and_update` / `find_one_and_delete` whose filter carries the
tenant and the visibility rule (not soft-deleted), so a row cannot change tenant or come back
from a delete between the check and the write. Driver errors become `DependencyFailed`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pymongo import ASCENDING, DESCENDING, ReturnDocument, UpdateOne
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import PyMongoError

from engine.adapters.mongo.changes import CHANGED_AT, epoch_fence, stamp
from engine.adapters.mongo.documents import Doc, tenant_query, vector
from engine.adapters.mongo.memory_rows import UNITS, MongoMemoryStore, row_of
from engine.adapters.mongo.schema import MEMORY
from engine.errors import DependencyFailed
from engine.records import INACTIVE_STATUSES, MemoryRow
from engine.scoping import TenantFilter
from engine.upkeep.item_writes import RowWrite
from engine.upkeep.items import RowPatch, soft_delete_patch


def patch_update(patch: RowPatch) -> Doc:
    """The `$set` of a patch: metadata keys one by one (a merge, not a replacement)."""
    sets: Doc = {f"metadata.{k}": v for k, v in patch.metadata.items()}
    sets["updatedAt"] = patch.at
    sets[CHANGED_AT] = stamp()
    if patch.text is not None:
        sets.update(
            {
                "content": patch.text.content,
                "embedding": vector(patch.text.embedding),
                "embeddingModel": patch.text.model,
                "embeddingDim": int(patch.text.embedding.shape[0]),
            }
        )
    if patch.validity is not None:
        sets["invalidAt"], sets["supersededBy"] = patch.validity
    if patch.decay_score is not None:
        sets["decayScore"] = patch.decay_score
    if patch.text is not None:  # the message vectors were of the old text
        return {"$set": sets, "$unset": {UNITS: ""}}
    return {"$set": sets}


def _valid_at(as_of: int | None) -> Doc:
    """The query of `MemoryRow.valid_at(as_of)`: active rows without `as_of`; with it, rows
    created by then that were not replaced yet (`invalidAt` later), or, never replaced, are
    still active (deleted rows never)."""
    inactive = {"$nin": list(INACTIVE_STATUSES)}
    if as_of is None:
        return {"metadata.status": inactive}
    return {
        "createdAt": {"$lte": as_of},
        "$or": [
            {"invalidAt": None, "metadata.status": inactive},
            {"invalidAt": {"$gt": as_of}, "metadata.status": {"$ne": "deleted"}},
        ],
    }


class MongoItemStore:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._db = db
        self._col: AsyncCollection[Doc] = db[MEMORY]

    @staticmethod
    def _query(where: TenantFilter, vector_id: str, *, visible: bool | None) -> Doc:
        """The row within the tenant: visible (not soft-deleted), soft-deleted only
        (`visible=False`) or either (None)."""
        # item operations never widen to the agent's user-less rows (`shared`)
        query = {**tenant_query(where.exact()), "_id": vector_id}
        if visible is not None:
            query["metadata.status"] = {"$ne": "deleted"} if visible else "deleted"
        return query

    async def _find(
        self, where: TenantFilter, vector_id: str, *, visible: bool
    ) -> MemoryRow | None:
        try:
            doc = await self._col.find_one(self._query(where, vector_id, visible=visible))
        except PyMongoError as exc:
            raise DependencyFailed(f"memory item read failed: {exc}") from exc
        return None if doc is None else row_of(doc)

    async def _patched(
        self, where: TenantFilter, vector_id: str, patch: RowPatch, *, visible: bool, what: str
    ) -> MemoryRow | None:
        try:
            doc = await self._col.find_one_and_update(
                self._query(where, vector_id, visible=visible),
                patch_update(patch),
                return_document=ReturnDocument.AFTER,
            )
        except PyMongoError as exc:
            raise DependencyFailed(f"memory item {what} failed: {exc}") from exc
        return None if doc is None else row_of(doc)

    async def get(self, where: TenantFilter, vector_id: str) -> MemoryRow | None:
        return await self._find(where, vector_id, visible=True)

    async def update(
        self, where: TenantFilter, vector_id: str, patch: RowPatch
    ) -> MemoryRow | None:
        return await self._patched(where, vector_id, patch, visible=True, what="update")

    async def soft_delete(self, where: TenantFilter, vector_id: str, at: int) -> MemoryRow | None:
        return await self.update(where, vector_id, soft_delete_patch(at))

    async def hard_delete(self, where: TenantFilter, vector_id: str) -> MemoryRow | None:
        # fenced by the epoch: a search process that holds the row loads the tenant anew
        async with epoch_fence(self._db, [where.agent_wallet], "memory item delete"):
            try:
                query = self._query(where, vector_id, visible=None)
                doc = await self._col.find_one_and_delete(query)
            except PyMongoError as exc:
                raise DependencyFailed(f"memory item delete failed: {exc}") from exc
        return None if doc is None else row_of(doc)

    async def get_deleted(self, where: TenantFilter, vector_id: str) -> MemoryRow | None:
        return await self._find(where, vector_id, visible=False)

    async def restore(
        self, where: TenantFilter, vector_id: str, patch: RowPatch
    ) -> MemoryRow | None:
        return await self._patched(where, vector_id, patch, visible=False, what="restore")

    async def newest(
        self,
        where: TenantFilter,
        source: str | None,
        limit: int,
        as_of: int | None = None,
        *,
        include_superseded: bool = False,
    ) -> list[MemoryRow]:
        hidden = ["deleted"] if include_superseded else list(INACTIVE_STATUSES)
        query: Doc = {**tenant_query(where.exact())}
        query |= _valid_at(as_of) if as_of is not None else {"metadata.status": {"$nin": hidden}}
        if source is not None:
            query["source"] = source
        try:
            cursor = self._col.find(query).sort([("createdAt", DESCENDING), ("_id", DESCENDING)])
            docs = await cursor.limit(limit).to_list(length=limit)
        except PyMongoError as exc:
            raise DependencyFailed(f"memory item listing failed: {exc}") from exc
        return [row_of(d) for d in docs]

    async def scan(
        self, where: TenantFilter, tagged: Mapping[str, str], after: str | None, limit: int
    ) -> list[MemoryRow]:
        query: Doc = {**tenant_query(where.exact())}
        query["metadata.status"] = {"$nin": list(INACTIVE_STATUSES)}
        # a dotted path matches a list holding the value as well as the value itself
        query |= {f"metadata.{path}": value for path, value in tagged.items()}
        if after is not None:
            query["_id"] = {"$gt": after}
        try:
            cursor = self._col.find(query).sort([("_id", ASCENDING)])
            docs = await cursor.limit(limit).to_list(length=limit)
        except PyMongoError as exc:
            raise DependencyFailed(f"memory item scan failed: {exc}") from exc
        return [row_of(d) for d in docs]

    async def read_rows(self, where: TenantFilter, vector_ids: Sequence[str]) -> list[MemoryRow]:
        query = {**tenant_query(where.exact()), "_id": {"$in": list(vector_ids)}}
        try:
            docs = await self._col.find(query).sort([("_id", ASCENDING)]).to_list(None)
        except PyMongoError as exc:
            raise DependencyFailed(f"memory item read failed: {exc}") from exc
        return [row_of(d) for d in docs]

    async def write_rows(self, where: TenantFilter, writes: Sequence[RowWrite]) -> None:
        at = stamp()
        ops: list[UpdateOne] = []
        for w in writes:
            if w.new is not None:
                # an id held by any row (another tenant's too) is left alone
                document = MongoMemoryStore.document(w.new, at)
                ops.append(UpdateOne({"_id": w.vector_id}, {"$setOnInsert": document}, upsert=True))
                continue
            if w.patch is None:
                continue
            update = patch_update(w.patch)
            query = self._query(where, w.vector_id, visible=True if w.visible_only else None)
            if w.revive:
                update["$set"] |= {"createdAt": w.patch.at, "validAt": w.patch.at}
                update["$set"].pop("metadata.deletedAt", None)
                update["$unset"] = {**update.get("$unset", {}), "metadata.deletedAt": ""}
            ops.append(UpdateOne(query, update))
        if not ops:
            return
        try:
            await self._col.bulk_write(ops, ordered=False)
        except PyMongoError as exc:
            raise DependencyFailed(f"memory item bulk write failed: {exc}") from exc
