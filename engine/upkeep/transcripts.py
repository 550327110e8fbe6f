"""A session's transcript read back in pages, always within an explicit tenant.

A transcript is the thread's messages in timestamp order (`TranscriptStore`). Here it is
addressed by its session id plus a `TenantFilter` matched exactly (the agent is required,
the user matches exactly, no user ⇒ user-less transcripts only), so another tenant's
transcript is reported exactly like a missing one (`NotFound`).

Pages are positions in the transcript as read: `transcript_page(..., before=n)` answers the
newest messages before position `n` (the whole transcript when None), oldest first, at most
`limit` of them and at most `PAGE_CHARS` characters of content and raw text (always at least
one message), so a reply stays far below a Kafka message's size. A page's `start` is the
position of its first message: asking again with `before=start` reads the page before it,
until `start` is 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.errors import InputRejected, NotFound
from engine.records import ScopeFields, StoredMessage
from engine.scoping import TenantFilter
from engine.upkeep.compression import SessionTranscripts
from schemas.requests import MAX_TRANSCRIPT_PAGE as MAX_PAGE_MESSAGES

PAGE_CHARS = 200_000
"""Characters of content and raw text of one page at most (a single message may exceed it:
it is then the page alone). JSON escaping at most sextuples a character's bytes, and a
Kafka reply holds 1,000,000 bytes."""


@dataclass(frozen=True, slots=True)
class TranscriptPage:
    """Messages `start` to `start + len(messages)` of a transcript of `total` messages."""

    session_id: str
    scope: ScopeFields
    messages: list[StoredMessage]
    start: int
    total: int
    summary: str | None
    created_at: int
    updated_at: int

    def json(self) -> dict[str, Any]:
        """The page as callers see it (camelCase, times in ms since epoch)."""
        return {
            "sessionId": self.session_id,
            **self.scope.view(),
            "messages": [_message_json(m) for m in self.messages],
            "start": self.start,
            "total": self.total,
            "summary": self.summary,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
        }


def _message_json(m: StoredMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": m.content, "timestamp": m.timestamp}
    for key, value in (
        ("turnId", m.turn_id),
        ("name", m.name),
        ("toolCalls", m.tool_calls),
        ("raw", m.raw),
    ):
        if value is not None:
            out[key] = value
    return out


def _size(m: StoredMessage) -> int:
    return len(m.content) + len(m.raw or "")


async def transcript_page(
    store: SessionTranscripts,
    where: TenantFilter,
    session_id: str,
    *,
    limit: int = MAX_PAGE_MESSAGES,
    before: int | None = None,
) -> TranscriptPage:
    """The page of messages before position `before` (see the module docstring). NotFound
    when the transcript is absent or outside `where`; InputRejected for bad input."""
    if not where.agent_wallet.strip():
        raise InputRejected("agentWallet is required")
    if not session_id.strip():
        raise InputRejected("session id is required")
    if not 1 <= limit <= MAX_PAGE_MESSAGES:
        raise InputRejected(f"limit must be from 1 to {MAX_PAGE_MESSAGES}")
    if before is not None and before < 0:
        raise InputRejected("before must be at least 0")
    transcript = await store.of_session(where.exact(), session_id)
    if transcript is None:
        raise NotFound(f"transcript {session_id!r} not found")
    messages = transcript.messages
    end = len(messages) if before is None else min(before, len(messages))
    start, chars = end, 0
    while start > 0 and end - start < limit:
        chars += _size(messages[start - 1])
        if chars > PAGE_CHARS and start < end:
            break
        start -= 1
    return TranscriptPage(
        session_id=transcript.session_id,
        scope=transcript.scope,
        messages=list(messages[start:end]),
        start=start,
        total=len(messages),
        summary=transcript.summary,
        created_at=transcript.created_at,
        updated_at=transcript.updated_at,
    )
