"""`GraphSources` on MongoDB (`engine.derivation`): the evidence of the entity rows (the
`memory` collection) and of the relations (`relations`), as `metadata.derivedFrom` (item ids)
and `metadata.sources` (one entry per item).

Every write is one atomic update per row: an evidence is pushed only while the row does not
hold the item yet, detached with `$pull`, and a row is dropped only while it holds none, so a
concurrent attach is never lost. Entity writes mark `changedAt` (a removal is fenced by the
agent's epoch, `epoch_fence`), as every `memory` write does (`engine.adapters.mongo.changes`)."""

from __future__ import annotations

from collections.abc import Sequence

from pymongo import ReturnDocument, UpdateOne
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import PyMongoError

from engine.adapters.mongo.changes import CHANGED_AT, epoch_fence, stamp
from engine.adapters.mongo.documents import Doc, tenant_query, vector
from engine.adapters.mongo.memory_rows import row_of
from engine.adapters.mongo.relations import relation_of
from engine.adapters.mongo.schema import MEMORY, RELATIONS
from engine.derivation import DERIVED_FROM, MAX_EVIDENCE, SOURCES, Attachment, DerivedRows
from engine.errors import DependencyFailed
from engine.records import Vector
from engine.scoping import TenantFilter

_FROM = f"metadata.{DERIVED_FROM}"
_SOURCES = f"metadata.{SOURCES}"


def _attach(a: Attachment) -> UpdateOne:
    push: Doc = {"$push": {_SOURCES: a.evidence.stored()}, "$addToSet": {_FROM: a.evidence.item}}
    if a.kind == "entity":
        push["$set"] = {CHANGED_AT: stamp()}
    # a row written before the bookkeeping (no `derivedFrom`) is left as it is
    # and a row that holds `MAX_EVIDENCE` items takes no more
    full = f"{_FROM}.{MAX_EVIDENCE - 1}"
    query = {"_id": a.row_id, _FROM: {"$exists": True, "$ne": a.evidence.item}, full: None}
    return UpdateOne(query, push)


class MongoGraphSources:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._db = db
        self._memory: AsyncCollection[Doc] = db[MEMORY]
        self._relations: AsyncCollection[Doc] = db[RELATIONS]

    async def attach(self, attachments: Sequence[Attachment]) -> None:
        for col, kind in ((self._memory, "entity"), (self._relations, "relation")):
            ops = [_attach(a) for a in attachments if a.kind == kind]
            if not ops:
                continue
            try:
                await col.bulk_write(ops, ordered=False)
            except PyMongoError as exc:
                raise DependencyFailed(f"graph evidence write failed: {exc}") from exc

    async def detach(self, where: TenantFilter, item_ids: Sequence[str]) -> DerivedRows:
        items = list(dict.fromkeys(item_ids))
        if not items:
            return DerivedRows([], [])
        tenant = tenant_query(where.exact())
        pull: Doc = {"$pull": {_SOURCES: {"item": {"$in": items}}, _FROM: {"$in": items}}}
        docs: dict[str, list[Doc]] = {}
        for name, col in (("entity", self._memory), ("relation", self._relations)):
            # entity rows by (tenant, source): the memory index's prefix, not every row
            only = {"source": "entity"} if name == "entity" else {}
            query = {"$and": [tenant, {**only, _FROM: {"$in": items}}]}
            update = pull | ({"$set": {CHANGED_AT: stamp()}} if name == "entity" else {})
            try:
                ids = [d["_id"] for d in await col.find(query, {"_id": 1}).to_list(None)]
                docs[name] = [
                    d
                    for i in ids
                    if (
                        d := await col.find_one_and_update(
                            {"_id": i}, update, return_document=ReturnDocument.AFTER
                        )
                    )
                    is not None
                ]
            except PyMongoError as exc:
                raise DependencyFailed(f"graph evidence detach failed: {exc}") from exc
        return DerivedRows(
            [row_of(d) for d in docs["entity"]], [relation_of(d) for d in docs["relation"]]
        )

    async def drop_bare(
        self, where: TenantFilter, entity_ids: Sequence[str], relation_ids: Sequence[str]
    ) -> tuple[list[str], list[str]]:
        tenant = tenant_query(where.exact())
        bare = {"$or": [{_SOURCES: {"$size": 0}}, {_SOURCES: {"$exists": False}}]}
        dropped: list[list[str]] = []
        for col, ids in ((self._memory, entity_ids), (self._relations, relation_ids)):
            gone: list[str] = []
            if col is self._memory and ids:  # a reader holding the rows loads the tenant anew
                async with epoch_fence(self._db, [where.agent_wallet], "graph entity removal"):
                    gone = await self._drop(col, tenant, bare, ids)
            else:
                gone = await self._drop(col, tenant, bare, ids)
            dropped.append(gone)
        return dropped[0], dropped[1]

    @staticmethod
    async def _drop(
        col: AsyncCollection[Doc], tenant: Doc, bare: Doc, ids: Sequence[str]
    ) -> list[str]:
        gone: list[str] = []
        for i in dict.fromkeys(ids):
            try:
                doc = await col.find_one_and_delete({"$and": [tenant, {"_id": i}, bare]})
            except PyMongoError as exc:
                raise DependencyFailed(f"graph row removal failed: {exc}") from exc
            if doc is not None:
                gone.append(i)
        return gone

    async def show_entity(
        self, where: TenantFilter, entity_id: str, content: str, embedding: Vector, model: str
    ) -> None:
        sets: Doc = {
            "content": content,
            "embedding": vector(embedding),
            "embeddingModel": model,
            "embeddingDim": int(embedding.shape[0]),
            CHANGED_AT: stamp(),
        }
        await self._set(self._memory, where, entity_id, sets)

    async def show_relation(
        self, where: TenantFilter, relation_id: str, evidence: str, created_at: int
    ) -> None:
        sets = {"metadata.evidence": evidence, "createdAt": created_at}
        await self._set(self._relations, where, relation_id, sets)

    @staticmethod
    async def _set(col: AsyncCollection[Doc], where: TenantFilter, row_id: str, sets: Doc) -> None:
        try:
            await col.update_one(
                {"$and": [tenant_query(where.exact()), {"_id": row_id}]}, {"$set": sets}
            )
        except PyMongoError as exc:
            raise DependencyFailed(f"graph row update failed: {exc}") from exc
