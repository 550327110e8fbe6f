"""In-memory `TranscriptStore` (unit tests, the contract suite's twin)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.adapters.memory.erasure import drop_user
from engine.adapters.memory.turn_vectors import attach_turn_vectors
from engine.records import (
    TRANSCRIPT_TURN_VECTORS,
    StoredMessage,
    Transcript,
    TranscriptAppend,
    TurnVectorFill,
)
from engine.scoping import TenantFilter


class InMemoryTranscriptStore:
    def __init__(self) -> None:
        self._docs: dict[str, Transcript] = {}
        self._turns: dict[str, set[str]] = {}

    def drop_user(self, agent_wallet: str, user_address: str) -> int:
        keys = drop_user(self._docs, lambda d: d.scope, agent_wallet, user_address)
        for key in keys:
            self._turns.pop(key, None)
        return len(keys)

    async def append(self, turn: TranscriptAppend) -> bool:
        key = turn.scope.document_key(turn.session_id)
        seen = self._turns.setdefault(key, set())
        if turn.turn_id in seen:
            return False
        seen.add(turn.turn_id)
        old = self._docs.get(key)
        messages: list[StoredMessage] = [*(old.messages if old else []), *turn.messages]
        messages.sort(key=lambda m: m.timestamp)
        self._docs[key] = Transcript(
            session_id=turn.session_id,
            scope=old.scope if old else turn.scope,
            messages=messages,
            summary=turn.summary if turn.summary is not None else (old.summary if old else None),
            token_count=(old.token_count if old else 0) + turn.token_count,
            created_at=min(turn.at, old.created_at) if old else turn.at,
            updated_at=max(turn.at, old.updated_at) if old else turn.at,
            turn_vectors=[
                *(old.turn_vectors if old else []),
                *([turn.vector] if turn.vector else []),
            ][-TRANSCRIPT_TURN_VECTORS:],
            metadata={**(old.metadata if old else {}), **turn.metadata},
        )
        return True

    async def append_many(self, turns: Sequence[TranscriptAppend]) -> list[bool]:
        return [await self.append(turn) for turn in turns]

    async def add_turn_vectors(self, fills: Sequence[TurnVectorFill]) -> int:
        return attach_turn_vectors(self._docs, fills, TRANSCRIPT_TURN_VECTORS)

    async def recent(self, where: TenantFilter, limit: int) -> list[Transcript]:
        docs = [d for d in self._docs.values() if where.admits(d.scope)]
        docs.sort(key=lambda d: (-d.updated_at, d.session_id))
        return docs[:limit]

    async def of_session(self, where: TenantFilter, session_id: str) -> Transcript | None:
        docs = [
            d for d in self._docs.values() if d.session_id == session_id and where.admits(d.scope)
        ]
        return max(docs, key=lambda d: d.updated_at, default=None)

    async def count(self, agent_wallet: str, user_address: str | None = None) -> int:
        return sum(
            1
            for d in self._docs.values()
            if d.scope.agent_wallet == agent_wallet
            and (user_address is None or d.scope.user_address == user_address)
        )

    async def of_agent(self, agent: str, since: int) -> list[Transcript]:
        """`TranscriptHistory.of_agent`: the agent's transcripts updated at or after `since`."""
        return [
            d
            for d in self._docs.values()
            if d.scope.agent_wallet == agent and d.updated_at >= since
        ]
