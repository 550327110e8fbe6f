"""In-memory adapters for what the in-memory runtime (`services.runtime_memory`) needs beyond
the unit-test twins of `engine.adapters.memory`: transcript history, archive pin state, and
working buffers readable as sessions. Each extends a twin and keeps its contract."""

from __future__ import annotations

from dataclasses import replace

from engine.adapters.memory import (
    InMemoryArchiveStore,
    InMemoryMaintenanceStore,
    InMemoryMemoryStore,
    InMemoryTranscriptStore,
    InMemoryWorkingStore,
)
from engine.records import ArchiveRecord, Transcript, WorkingAppend
from engine.scoping import TenantFilter
from engine.upkeep.sessions import InMemorySessionStore, SessionDocument, SessionEdit


class InMemoryTranscriptLog(InMemoryTranscriptStore):
    """`InMemoryTranscriptStore` with `TranscriptHistory.of_agent`."""

    async def of_agent(self, agent: str, since: int) -> list[Transcript]:
        return [
            d
            for d in self._docs.values()
            if d.scope.agent_wallet == agent and d.updated_at >= since
        ]


class InMemoryArchiveLog(InMemoryArchiveStore):
    """`InMemoryArchiveStore` that records pins (`ArchiveCids`)."""

    def record(self, archive_id: str) -> ArchiveRecord | None:
        return self._rows.get(archive_id)

    async def set_cid(self, archive_id: str, cid: str) -> None:
        found = self._rows.get(archive_id)
        if found is not None:
            self._rows[archive_id] = replace(found, ipfs_cid=cid)


class InMemoryArchiveMaintenance(InMemoryMaintenanceStore):
    """`InMemoryMaintenanceStore` whose pin state (`ArchivePinState`) is read from the
    archives stored in an `InMemoryArchiveLog`, as the Mongo adapter reads its collection."""

    def __init__(self, memory: InMemoryMemoryStore, archives: InMemoryArchiveLog) -> None:
        super().__init__(memory)
        self._archives = archives

    async def unpinned_content(self, archive_id: str) -> str | None:
        found = self._archives.record(archive_id)
        if found is None or found.ipfs_cid:
            return None
        return found.content

    async def archive_cid(
        self, archive_id: str, agent_wallet: str, user_address: str | None, *, any_user: bool
    ) -> tuple[str | None] | None:
        found = self._archives.record(archive_id)
        if found is None or found.scope.agent_wallet != agent_wallet:
            return None
        if not any_user and found.scope.user_address != user_address:
            return None
        return (found.ipfs_cid or None,)


class InMemoryWorkingSessions(InMemoryWorkingStore):
    """Working buffers that are also `SessionStore` sessions, as in MongoDB where both are
    one document: every append is mirrored into a session document (context oldest first).
    Edits through the session side are not mirrored back into the working lines."""

    def __init__(self) -> None:
        super().__init__()
        self.sessions = InMemorySessionStore()

    async def append(self, lines: WorkingAppend, keep: int) -> bool:
        if not await super().append(lines, keep):
            return False
        buffer = self._docs[lines.scope.document_key(lines.session_id)]
        old = self.sessions.docs.get(lines.scope.document_key(lines.session_id))
        self.sessions.put(
            SessionDocument(
                session_id=lines.session_id,
                scope=buffer.scope,
                context=list(reversed(buffer.lines)),
                entities=old.entities if old else {},
                state=dict(buffer.state),
                metadata=old.metadata if old else {},
                created_at=buffer.created_at,
                last_accessed_at=buffer.last_accessed_at,
                expires_at=max(lines.expires_at, old.expires_at or 0) if old else lines.expires_at,
            )
        )
        return True

    async def touch(self, where: TenantFilter, session_id: str, at: int) -> SessionDocument | None:
        return await self.sessions.touch(where, session_id, at)

    async def edit(
        self, where: TenantFilter, session_id: str, edit: SessionEdit
    ) -> SessionDocument | None:
        return await self.sessions.edit(where, session_id, edit)
