"""`ArchiveStore` on MongoDB: the `archives` collection, keyed by `archiveId`."""

from __future__ import annotations

from pymongo import DESCENDING
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError, PyMongoError

from engine.adapters.mongo.documents import (
    Doc,
    optional_vector,
    scope_doc,
    scope_of,
    tenant_query,
    vector,
)
from engine.adapters.mongo.schema import ARCHIVES
from engine.errors import DependencyFailed
from engine.records import INACTIVE_STATUSES, ArchiveRecord
from engine.scoping import TenantFilter


class MongoArchiveStore:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._col: AsyncCollection[Doc] = db[ARCHIVES]

    async def insert_if_absent(self, archive: ArchiveRecord) -> bool:
        doc: Doc = {
            "_id": archive.archive_id,
            "archiveId": archive.archive_id,
            **scope_doc(archive.scope),
            "summary": archive.summary,
            "topics": archive.topics,
            "dateRange": {"start": archive.start, "end": archive.end},
            "createdAt": archive.created_at,
            "status": archive.status,
            "embedding": vector(archive.embedding) if archive.embedding is not None else None,
            "embeddingModel": archive.embedding_model,
            "metadata": {"entryCount": archive.entry_count, **archive.metadata},
            "content": archive.content,
            "compressed": archive.content is not None,
            "ipfsCid": archive.ipfs_cid,
        }
        try:
            result = await self._col.update_one(
                {"_id": archive.archive_id}, {"$setOnInsert": doc}, upsert=True
            )
        except DuplicateKeyError:
            return False
        except PyMongoError as exc:
            raise DependencyFailed(f"archive insert failed: {exc}") from exc
        return result.upserted_id is not None

    async def set_cid(self, archive_id: str, cid: str) -> None:
        """Record where the (encrypted) archive was pinned."""
        try:
            await self._col.update_one({"_id": archive_id}, {"$set": {"ipfsCid": cid}})
        except PyMongoError as exc:
            raise DependencyFailed(f"archive update failed: {exc}") from exc

    async def content_of(self, archive_id: str) -> str | None:
        try:
            doc = await self._col.find_one({"_id": archive_id}, {"content": 1})
        except PyMongoError as exc:
            raise DependencyFailed(f"archive read failed: {exc}") from exc
        return None if doc is None else doc.get("content")

    async def active(self, where: TenantFilter, limit: int) -> list[ArchiveRecord]:
        query = {**tenant_query(where), "status": {"$nin": list(INACTIVE_STATUSES)}}
        try:
            docs = await (
                self._col.find(query, {"content": 0})
                .sort("createdAt", DESCENDING)
                .limit(limit)
                .to_list(length=limit)
            )
        except PyMongoError as exc:
            raise DependencyFailed(f"archive read failed: {exc}") from exc
        return [
            ArchiveRecord(
                archive_id=d["archiveId"],
                scope=scope_of(d),
                summary=d["summary"],
                topics=list(d.get("topics") or []),
                entry_count=int((d.get("metadata") or {}).get("entryCount", 0)),
                start=int(d["dateRange"]["start"]),
                end=int(d["dateRange"]["end"]),
                created_at=int(d["createdAt"]),
                embedding=optional_vector(d),
                embedding_model=d.get("embeddingModel"),
                status=d.get("status", "active"),
                metadata={k: v for k, v in (d.get("metadata") or {}).items() if k != "entryCount"},
            )
            for d in docs
        ]
