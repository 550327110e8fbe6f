"""post_turn persistence (reference §7.1-§7.2), idempotent and in event time.

One `TurnRecorded` → (1) the turn's messages appended to the thread's transcript (not
overwritten: fixes §16.11), (2) its user/assistant lines appended to the thread's working
buffer, keeping the newest 12, (3) one `session` memory row with the turn summary, embedded.
Each write is keyed by the turn id, so a redelivered or replayed event changes nothing; every
timestamp comes from the event's `occurred_at`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from engine.ports import Embedder, MemoryStore, TranscriptStore, WorkingStore
from engine.records import (
    MemoryRow,
    StoredMessage,
    TranscriptAppend,
    TurnVector,
    WorkingAppend,
)
from engine.scoping import scope_fields
from schemas.events import TurnRecorded
from schemas.ids import h32, thread_session_id, to_ms

DAY_MS = 86_400_000
SYSTEM_METADATA_KEYS = ("type", "source", "layer", "status", "contextId", "turnId", "sessionId")
"""Keys the system owns; caller metadata never overrides them (fixes reference §16.27)."""

_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class IngestPolicy:
    working_lines: int = 12
    working_line_chars: int = 1000
    session_ttl_ms: int = 30 * DAY_MS
    summary_messages: int = 6
    summary_chars: int = 1800


@dataclass(frozen=True, slots=True)
class TurnStored:
    """What `record_turn` did. `*_applied` is False when the turn was already stored."""

    session_id: str
    working_session_id: str
    transcript_applied: bool
    working_applied: bool
    vector_id: str
    vector_inserted: bool


def _collapse(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def turn_messages(event: TurnRecorded) -> list[StoredMessage]:
    """Messages and tool events merged into one list, ascending by timestamp (stable)."""
    merged = [
        StoredMessage(
            role=m.role,
            content=m.content,
            timestamp=m.timestamp,
            tool_calls=[c.model_dump() for c in m.tool_calls] if m.tool_calls else None,
            turn_id=event.turn_id,
        )
        for m in event.messages
    ]
    for tool in event.tool_events:
        content = f"tool:{tool.name} status:{tool.status}"
        if tool.result:
            content += f" result:{tool.result[:2000]}"
        merged.append(
            StoredMessage(
                role="tool",
                content=content,
                timestamp=tool.timestamp,
                tool_calls=[{"name": tool.name, "args": dict(tool.args)}],
                turn_id=event.turn_id,
            )
        )
    return sorted(merged, key=lambda m: m.timestamp)


def compact_summary(messages: list[StoredMessage], policy: IngestPolicy = IngestPolicy()) -> str:
    """Last 6 user/assistant/tool messages as `role: text` lines, ≤ 1800 chars (§7.1 step 6)."""
    picked = [m for m in messages if m.role in ("user", "assistant", "tool")]
    lines = []
    for m in picked[-policy.summary_messages :]:
        limit = 500 if m.role == "tool" else 800
        lines.append(f"{m.role}: {_collapse(m.content)[:limit]}")
    return "\n".join(lines)[: policy.summary_chars]


def working_lines(
    messages: list[StoredMessage], policy: IngestPolicy = IngestPolicy()
) -> list[str]:
    """`role: content` lines of the non-blank user/assistant messages, oldest first."""
    return [
        f"{m.role}: {m.content.strip()}"[: policy.working_line_chars]
        for m in messages
        if m.role in ("user", "assistant") and m.content.strip()
    ]


def session_vector_id(event: TurnRecorded) -> str:
    """Deterministic id of the turn's session row (same turn ⇒ same id)."""
    return "vec_" + h32(f"{event.scope.agent_wallet}|{event.session_id}|{event.turn_id}|session")


def _metadata(event: TurnRecorded, **system: Any) -> dict[str, Any]:
    caller = {k: v for k, v in event.metadata.items() if k not in SYSTEM_METADATA_KEYS}
    return {**caller, **{k: v for k, v in system.items() if v is not None}}


@dataclass(slots=True)
class TurnRecorder:
    transcripts: TranscriptStore
    working: WorkingStore
    memory: MemoryStore
    embedder: Embedder
    policy: IngestPolicy = IngestPolicy()

    async def record(self, event: TurnRecorded) -> TurnStored:
        """Store the turn. Writes go transcript → working → session row, and the session
        row is written last: once it exists, every earlier write has landed, so a
        redelivery can skip the embedding (replays of stored turns cost no model time)."""
        at = to_ms(event.occurred_at)
        messages = turn_messages(event)
        summary = event.summary or compact_summary(messages, self.policy)
        content = summary or "\n".join(f"{m.role}: {m.content}" for m in messages)
        fields = scope_fields(event.scope, event.thread_id)
        vector_id = session_vector_id(event)
        if await self.memory.exists(vector_id):
            return TurnStored(
                session_id=event.session_id,
                working_session_id=thread_session_id(event.scope, event.thread_id),
                transcript_applied=False,
                working_applied=False,
                vector_id=vector_id,
                vector_inserted=False,
            )
        [embedding] = await self.embedder.embed([content], "document")
        turn_vector = TurnVector(event.turn_id, embedding, self.embedder.model)
        transcript_applied = await self.transcripts.append(
            TranscriptAppend(
                session_id=event.session_id,
                scope=fields,
                turn_id=event.turn_id,
                messages=messages,
                summary=summary,
                token_count=event.total_tokens,
                at=at,
                metadata={"modelUsed": event.model_used, "contextWindow": event.context_window},
                vector=turn_vector,
            )
        )
        working_id = thread_session_id(event.scope, event.thread_id)
        working_applied = await self.working.append(
            WorkingAppend(
                session_id=working_id,
                scope=fields,
                turn_id=event.turn_id,
                lines=working_lines(messages, self.policy),
                at=at,
                expires_at=at + self.policy.session_ttl_ms,
                state={
                    "lastSessionId": event.session_id,
                    "lastTurnAt": at,
                    "lastTurnId": event.turn_id,
                },
                vector=turn_vector,
            ),
            keep=self.policy.working_lines,
        )
        inserted = await self.memory.insert_if_absent(
            MemoryRow(
                vector_id=vector_id,
                scope=fields,
                content=content,
                embedding=embedding,
                embedding_model=self.embedder.model,
                source="session",
                created_at=at,
                metadata=_metadata(
                    event,
                    type="agent_memory_turn",
                    source="agent_loop",
                    contextId=event.context_id,
                    turnId=event.turn_id,
                    sessionId=event.session_id,
                ),
            )
        )
        return TurnStored(
            session_id=event.session_id,
            working_session_id=working_id,
            transcript_applied=transcript_applied,
            working_applied=working_applied,
            vector_id=vector_id,
            vector_inserted=inserted,
        )
