"""In-memory `ArchiveStore` (unit tests, the contract suite's twin). It keeps the records it
is given: a sealed record (`engine.upkeep.archive_seal`) stays sealed here."""

from __future__ import annotations

from dataclasses import replace

from engine.adapters.memory.erasure import drop_user
from engine.records import INACTIVE_STATUSES, ArchiveRecord
from engine.scoping import TenantFilter


class InMemoryArchiveStore:
    def __init__(self) -> None:
        self._rows: dict[str, ArchiveRecord] = {}

    def drop_user(self, agent_wallet: str, user_address: str) -> int:
        return len(drop_user(self._rows, lambda r: r.scope, agent_wallet, user_address))

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

    def record(self, archive_id: str) -> ArchiveRecord | None:
        return self._rows.get(archive_id)

    async def set_cid(self, archive_id: str, cid: str) -> None:
        """`ArchiveCids.set_cid`: record the archive's pin."""
        found = self._rows.get(archive_id)
        if found is not None:
            self._rows[archive_id] = replace(found, ipfs_cid=cid)

    async def unpinned(self, archive_id: str) -> ArchiveRecord | None:
        """`ArchiveCids.unpinned`: the stored record if it has content and no CID yet."""
        found = self._rows.get(archive_id)
        if found is None or found.ipfs_cid:
            return None
        content = found.content if found.seal is None else found.seal.content
        return found if content is not None else None

    def records(self) -> list[ArchiveRecord]:
        """Every stored record, as stored (tests dump them)."""
        return list(self._rows.values())
