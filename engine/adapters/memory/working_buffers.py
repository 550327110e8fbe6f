"""In-memory working buffers that are also sessions, as in MongoDB where both are one document
(the in-memory runtime's twin of the Mongo working store)."""

from __future__ import annotations

from engine.adapters.memory.erasure import drop_user
from engine.adapters.memory.sessions import InMemorySessionStore
from engine.adapters.memory.working import InMemoryWorkingStore
from engine.records import WorkingAppend
from engine.scoping import TenantFilter
from engine.upkeep.sessions import SessionDocument, SessionEdit


class InMemoryWorkingBuffers(InMemoryWorkingStore):
    """Working buffers that are also `SessionStore` sessions, as in MongoDB where both are
    one document: every append is mirrored into a session document (context oldest first).
    Edits through the session side are not mirrored back into the working lines."""

    def __init__(self) -> None:
        super().__init__()
        self.sessions = InMemorySessionStore()

    def drop_user(self, agent_wallet: str, user_address: str) -> int:
        buffers = super().drop_user(agent_wallet, user_address)
        sessions = drop_user(self.sessions.docs, lambda d: d.scope, agent_wallet, user_address)
        # one document per session in MongoDB: a session edited but never appended to counts
        return max(buffers, len(sessions))

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
