"""In-memory `TranscriptStore` (unit tests, the contract suite's twin): a head per thread and
its turns kept apart, read back as `engine.adapters.mongo.transcripts` assembles them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.adapters.memory.erasure import drop_user
from engine.records import ScopeFields, StoredMessage, Transcript, TranscriptAppend
from engine.scoping import TenantFilter


@dataclass(frozen=True, slots=True)
class _Head:
    session_id: str
    scope: ScopeFields
    created_at: int
    updated_at: int


class InMemoryTranscriptStore:
    def __init__(self) -> None:
        self._heads: dict[str, _Head] = {}
        self._turns: dict[str, dict[str, TranscriptAppend]] = {}
        self._seq: dict[str, int] = {}
        """Each turn's place in the order turns were stored (orders turns of equal `at`)."""

    def drop_user(self, agent_wallet: str, user_address: str) -> int:
        keys = drop_user(self._heads, lambda h: h.scope, agent_wallet, user_address)
        for key in keys:
            for turn_id in self._turns.pop(key, {}):
                self._seq.pop(f"{key}|{turn_id}", None)
        return len(keys)

    async def append(self, turn: TranscriptAppend) -> bool:
        key = turn.scope.document_key(turn.session_id)
        old = self._heads.get(key)
        self._heads[key] = _Head(
            turn.session_id if old is None else old.session_id,
            turn.scope if old is None else old.scope,
            turn.at if old is None else min(turn.at, old.created_at),
            turn.at if old is None else max(turn.at, old.updated_at),
        )
        turns = self._turns.setdefault(key, {})
        if turn.turn_id in turns:
            return False
        turns[turn.turn_id] = turn
        self._seq[f"{key}|{turn.turn_id}"] = len(self._seq)
        return True

    async def append_many(self, turns: Sequence[TranscriptAppend]) -> list[bool]:
        return [await self.append(turn) for turn in turns]

    async def recent(
        self, where: TenantFilter, limit: int, turns: int | None = None
    ) -> list[Transcript]:
        keys = [k for k, h in self._heads.items() if where.admits(h.scope)]
        keys.sort(key=lambda k: (-self._heads[k].updated_at, self._heads[k].session_id))
        return [self._transcript(k, turns) for k in keys[:limit]]

    async def of_session(self, where: TenantFilter, session_id: str) -> Transcript | None:
        keys = [
            k
            for k, h in self._heads.items()
            if h.session_id == session_id and where.admits(h.scope)
        ]
        key = max(keys, key=lambda k: self._heads[k].updated_at, default=None)
        return None if key is None else self._transcript(key, None)

    async def count(self, agent_wallet: str, user_address: str | None = None) -> int:
        return sum(
            1
            for h in self._heads.values()
            if h.scope.agent_wallet == agent_wallet
            and (user_address is None or h.scope.user_address == user_address)
        )

    async def of_agent(self, agent: str, since: int) -> list[Transcript]:
        """`TranscriptHistory.of_agent`: the agent's transcripts updated at or after `since`."""
        return [
            self._transcript(k, None)
            for k, h in self._heads.items()
            if h.scope.agent_wallet == agent and h.updated_at >= since
        ]

    def _transcript(self, key: str, newest: int | None) -> Transcript:
        head = self._heads[key]
        turns = sorted(
            self._turns.get(key, {}).values(),
            key=lambda t: (t.at, self._seq[f"{key}|{t.turn_id}"]),
        )
        if newest is not None:
            turns = turns[-newest:] if newest > 0 else []
        messages: list[StoredMessage] = sorted(
            (m for t in turns for m in t.messages), key=lambda m: m.timestamp
        )
        summary = None
        metadata: dict[str, object] = {}
        for t in turns:
            summary = t.summary if t.summary is not None else summary
            metadata.update(t.metadata)
        return Transcript(
            session_id=head.session_id,
            scope=head.scope,
            messages=messages,
            summary=summary,
            token_count=sum(t.token_count for t in turns),
            created_at=head.created_at,
            updated_at=head.updated_at,
            metadata=metadata,
        )
