"""In-memory `JobStore` and `MaintenanceStore` (unit tests, the contract suite's twins)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from engine.adapters.memory.archives import InMemoryArchiveStore
from engine.adapters.memory.memory_rows import InMemoryMemoryStore
from engine.records import INACTIVE_STATUSES
from engine.upkeep.jobs import JobRecord, JobStatus, names_agent
from engine.upkeep.maintenance import Purged


class InMemoryJobStore:
    def __init__(self) -> None:
        self.records: dict[str, JobRecord] = {}

    async def start(self, record: JobRecord) -> bool:
        existing = self.records.get(record.job_id)
        if existing is not None and existing.status != "running":
            return False
        self.records[record.job_id] = record
        return True

    async def get(self, job_id: str) -> JobRecord | None:
        return self.records.get(job_id)

    async def finish(self, record: JobRecord) -> None:
        self.records[record.job_id] = record

    async def abandon(self, record: JobRecord) -> bool:
        existing = self.records.get(record.job_id)
        if (
            existing is None
            or existing.status != "running"
            or existing.created_at != record.created_at
        ):
            return False
        self.records[record.job_id] = record
        return True

    async def running(self, job_type: str) -> list[JobRecord]:
        rows = [r for r in self.records.values() if r.type == job_type and r.status == "running"]
        return sorted(rows, key=lambda r: -r.created_at)

    async def recent(
        self, *, agent: str | None = None, status: JobStatus | None = None, limit: int = 20
    ) -> list[JobRecord]:
        rows = [
            r
            for r in self.records.values()
            if (agent is None or names_agent(r.params, agent))
            and (status is None or r.status == status)
        ]
        rows.sort(key=lambda r: (-r.created_at, r.job_id))
        return rows[: max(limit, 1)]


class InMemoryMaintenanceStore:
    """Maintenance over an `InMemoryMemoryStore`'s rows."""

    def __init__(self, memory: InMemoryMemoryStore) -> None:
        self._memory = memory

    async def users_of(self, agent: str) -> list[str | None]:
        users = {r.scope.user_address for r in self._memory.rows() if r.scope.agent_wallet == agent}
        return sorted(users, key=lambda u: (u is not None, u or ""))

    async def agents(self) -> list[str]:
        return sorted({r.scope.agent_wallet for r in self._memory.rows()})

    async def set_decay(self, scores: Sequence[tuple[str, float]], at: int) -> int:
        changed = 0
        for vid, score in scores:
            row = self._memory.row(vid)
            if (
                row is not None
                and row.status not in INACTIVE_STATUSES
                and row.metadata.get("retention") != "pinned"
            ):
                self._memory.put(replace(row, decay_score=score))
                changed += 1
        return changed

    async def purge(self, cutoff: int, min_decay: float) -> list[Purged]:
        doomed = [
            Purged(r.vector_id, r.scope)
            for r in self._memory.rows()
            if r.created_at < cutoff
            and (
                (r.decay_score < min_decay and r.metadata.get("retention") != "pinned")
                or r.status == "deleted"
            )
        ]
        for row in doomed:
            self._memory.drop(row.vector_id)
        return doomed


class InMemoryArchiveMaintenance(InMemoryMaintenanceStore):
    """`InMemoryMaintenanceStore` whose pin state (`ArchivePinState`) is read from the
    archives stored in an `InMemoryArchiveStore`, as the Mongo adapter reads its collection."""

    def __init__(self, memory: InMemoryMemoryStore, archives: InMemoryArchiveStore) -> None:
        super().__init__(memory)
        self._archives = archives

    async def archive_cid(
        self, archive_id: str, agent_wallet: str, user_address: str | None, *, any_user: bool
    ) -> tuple[str | None] | None:
        found = self._archives.record(archive_id)
        if found is None or found.scope.agent_wallet != agent_wallet:
            return None
        if not any_user and found.scope.user_address != user_address:
            return None
        return (found.ipfs_cid or None,)
