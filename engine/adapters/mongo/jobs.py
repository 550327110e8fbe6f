"""MongoDB adapters of the maintenance ports: job records (`memory_jobs`) and bulk
maintenance of the `memory` collection (plus the pin state of `archives`, which the archive
job reads to repair a pin that failed)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

from pymongo import ASCENDING, DESCENDING, UpdateOne
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError, PyMongoError

from engine.adapters.mongo.changes import CHANGED_AT, epoch_fence, restamp_slow, stamp
from engine.adapters.mongo.documents import Doc, scope_of
from engine.adapters.mongo.schema import ARCHIVES, JOBS, MEMORY
from engine.errors import DependencyFailed
from engine.records import INACTIVE_STATUSES
from engine.upkeep.jobs import JobRecord, JobStatus
from engine.upkeep.maintenance import Purged

PURGE_BATCH = 500
"""Rows deleted per request by a cleanup."""
_PURGED_FIELDS = {"agentWallet": 1, "userAddress": 1, "threadId": 1, "mode": 1, "haiId": 1}


def _doc(record: JobRecord) -> Doc:
    data = asdict(record)
    return {
        "_id": record.job_id,
        "jobId": record.job_id,
        "type": record.type,
        "status": record.status,
        "createdAt": record.created_at,
        "completedAt": record.completed_at,
        "attempts": record.attempts,
        "params": data["params"],
        "result": data["result"],
        "error": record.error,
        "errorType": record.error_type,
    }


def _record(doc: Doc) -> JobRecord:
    return JobRecord(
        job_id=doc["jobId"],
        type=doc["type"],
        status=doc["status"],
        created_at=int(doc["createdAt"]),
        params=dict(doc.get("params") or {}),
        completed_at=doc.get("completedAt"),
        attempts=int(doc.get("attempts", 0)),
        result=doc.get("result"),
        error=doc.get("error"),
        error_type=doc.get("errorType"),
    )


class MongoJobStore:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._col = db[JOBS]

    async def start(self, record: JobRecord) -> bool:
        try:
            # matches only a running record: an ended one makes the upsert's insert collide
            await self._col.replace_one(
                {"_id": record.job_id, "status": "running"}, _doc(record), upsert=True
            )
        except DuplicateKeyError:
            return False
        except PyMongoError as exc:
            raise DependencyFailed(f"job record failed: {exc}") from exc
        return True

    async def get(self, job_id: str) -> JobRecord | None:
        try:
            doc = await self._col.find_one({"_id": job_id})
        except PyMongoError as exc:
            raise DependencyFailed(f"job read failed: {exc}") from exc
        return None if doc is None else _record(doc)

    async def finish(self, record: JobRecord) -> None:
        try:
            await self._col.replace_one({"_id": record.job_id}, _doc(record), upsert=True)
        except PyMongoError as exc:
            raise DependencyFailed(f"job record failed: {exc}") from exc

    async def abandon(self, record: JobRecord) -> bool:
        query = {"_id": record.job_id, "status": "running", "createdAt": record.created_at}
        try:
            result = await self._col.replace_one(query, _doc(record))
        except PyMongoError as exc:
            raise DependencyFailed(f"job record failed: {exc}") from exc
        return result.modified_count == 1

    async def running(self, job_type: str) -> list[JobRecord]:
        query = {"type": job_type, "status": "running"}
        try:
            docs = await self._col.find(query).sort("createdAt", DESCENDING).to_list(100)
        except PyMongoError as exc:
            raise DependencyFailed(f"job read failed: {exc}") from exc
        return [_record(d) for d in docs]

    async def recent(
        self, *, agent: str | None = None, status: JobStatus | None = None, limit: int = 20
    ) -> list[JobRecord]:
        query: Doc = {}
        if agent is not None:
            # an array field matches a query value it contains: agentWallets holds the agent
            query["$or"] = [{"params.agentWallet": agent}, {"params.agentWallets": agent}]
        if status is not None:
            query["status"] = status
        order = [("createdAt", DESCENDING), ("_id", ASCENDING)]
        try:
            docs = await self._col.find(query).sort(order).limit(max(limit, 1)).to_list()
        except PyMongoError as exc:
            raise DependencyFailed(f"job read failed: {exc}") from exc
        return [_record(d) for d in docs]


class MongoMaintenanceStore:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._db = db
        self._col = db[MEMORY]
        self._archives = db[ARCHIVES]

    async def archive_cid(
        self, archive_id: str, agent_wallet: str, user_address: str | None, *, any_user: bool
    ) -> tuple[str | None] | None:
        """`(cid,)` of the agent's archive (`cid` None while unpinned), or None when the
        archive does not exist or is another agent's; with `any_user=False` also another
        user's (`user_address` None: user-less archives only)."""
        query: Doc = {"_id": archive_id, "agentWallet": agent_wallet}
        if not any_user:
            query["userAddress"] = user_address
        try:
            doc = await self._archives.find_one(query, {"ipfsCid": 1})
        except PyMongoError as exc:
            raise DependencyFailed(f"archive read failed: {exc}") from exc
        if doc is None:
            return None
        cid = doc.get("ipfsCid")
        return (cid if isinstance(cid, str) and cid else None,)

    async def users_of(self, agent: str) -> list[str | None]:
        try:
            values = await self._col.distinct("userAddress", {"agentWallet": agent})
        except PyMongoError as exc:
            raise DependencyFailed(f"maintenance read failed: {exc}") from exc
        users = {v if isinstance(v, str) else None for v in values}
        return sorted(users, key=lambda u: (u is not None, u or ""))

    async def agents(self) -> list[str]:
        try:
            values = await self._col.distinct("agentWallet")
        except PyMongoError as exc:
            raise DependencyFailed(f"maintenance read failed: {exc}") from exc
        return sorted(v for v in values if isinstance(v, str))

    async def set_decay(self, scores: Sequence[tuple[str, float]], at: int) -> int:
        if not scores:
            return 0
        active = {"metadata.status": {"$nin": list(INACTIVE_STATUSES)}}
        changed = stamp()
        ops = [
            UpdateOne(
                {"_id": vid, **active, "metadata.retention": {"$ne": "pinned"}},
                {"$set": {"decayScore": score, CHANGED_AT: changed}},
            )
            for vid, score in scores
        ]
        try:
            result = await self._col.bulk_write(ops, ordered=False)
        except PyMongoError as exc:
            raise DependencyFailed(f"decay update failed: {exc}") from exc
        await restamp_slow(self._col, [vid for vid, _ in scores], changed, "decay update")
        return result.matched_count

    async def purge(self, cutoff: int, min_decay: float) -> list[Purged]:
        old = {"createdAt": {"$lt": cutoff}}
        query = {
            "$or": [
                {**old, "decayScore": {"$lt": min_decay}, "metadata.retention": {"$ne": "pinned"}},
                {**old, "metadata.status": "deleted"},
            ]
        }
        purged: list[Purged] = []
        try:
            # the doomed rows are read (ids and tenants, for their history), then deleted by
            # id under the same query, batch by batch; a row that stopped matching in between
            # (restored meanwhile) is not deleted and not reported
            found = await self._col.find(query, _PURGED_FIELDS).to_list(None)
            agents = [scope_of(d).agent_wallet for d in found]
            async with epoch_fence(self._db, agents, "cleanup"):
                for start in range(0, len(found), PURGE_BATCH):
                    batch = {d["_id"]: d for d in found[start : start + PURGE_BATCH]}
                    ids = list(batch)
                    result = await self._col.delete_many({"_id": {"$in": ids}, **query})
                    if result.deleted_count < len(ids):
                        left = self._col.find({"_id": {"$in": ids}}, {"_id": 1})
                        for doc in await left.to_list(None):
                            batch.pop(doc["_id"], None)
                    purged.extend(Purged(str(i), scope_of(d)) for i, d in batch.items())
        except PyMongoError as exc:
            raise DependencyFailed(f"cleanup failed: {exc}") from exc
        return purged
