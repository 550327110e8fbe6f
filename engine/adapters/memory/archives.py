"""In-memory `ArchiveStore` (unit tests, the contract suite's twin)."""

from __future__ import annotations

from engine.records import INACTIVE_STATUSES, ArchiveRecord
from engine.scoping import TenantFilter


class InMemoryArchiveStore:
    def __init__(self) -> None:
        self._rows: dict[str, ArchiveRecord] = {}

    async def insert_if_absent(self, archive: ArchiveRecord) -> bool:
        if archive.archive_id in self._rows:
            return False
        self._rows[archive.archive_id] = archive
        return True

    async def active(self, where: TenantFilter, limit: int) -> list[ArchiveRecord]:
        rows = [
            a
            for a in self._rows.values()
            if where.admits(a.scope) and a.status not in INACTIVE_STATUSES
        ]
        rows.sort(key=lambda a: (-a.created_at, a.archive_id))
        return rows[:limit]
