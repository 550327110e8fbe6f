"""The reference's `transcripts/index` body (reference §13.3) as one model, `TranscriptInput`;
`TranscriptInput.turns` makes one `TurnRecorded` per exchange, so a whole transcript is
stored by the transcripts group like turns recorded one by one (transcript appended, the
thread's working buffer, one embedded `session` row per exchange; extraction and patterns
read the same turns).

An exchange is the messages from one user message up to the next user message that follows
an assistant answer (system and tool messages stay with the exchange they sit in); an
exchange longer than `MAX_MESSAGES` is cut. The reference embedded every message as its own
row; an exchange is the unit pre_turn's layers and the transcript store already work in.

Turn ids are derived from the tenant, the session, the thread, the exchange's position and
its text (never the clock), so indexing the same transcript twice, or a transcript that
grew, stores each exchange once (the reference's upsert replaced the stored messages,
reference §16.11). The messages are the turn's (`schemas.turn_input.MessageInput`), refused
in the same words; the loose rules and the refusals are `schemas.bodies`'. Times are
milliseconds since epoch.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field, field_validator

from schemas.bodies import (
    Alias,
    LooseId,
    Refused,
    parse_body,
    within_message_limit,
)
from schemas.events import MAX_MESSAGES, TurnRecorded
from schemas.ids import event_time, from_ms, h32
from schemas.scope import Scope, ScopeError
from schemas.turn_input import MessageInput, TurnInput, UsageInput

MAX_TRANSCRIPT_MESSAGES = 2_000
"""Upper bound on the messages of one call (send a longer transcript in parts)."""
SPOKEN = ("user", "assistant")


def exchanges(messages: list[MessageInput]) -> list[list[tuple[int, MessageInput]]]:
    """The non-blank messages (with their position in the transcript) cut into exchanges
    (see the module docstring), in order. A blank message is dropped (an assistant message
    carrying only tool calls has no text to store)."""
    out: list[list[tuple[int, MessageInput]]] = []
    current: list[tuple[int, MessageInput]] = []
    answered = False
    for i, message in enumerate(messages):
        if message.content is None:
            continue
        starts = message.role == "user" and answered
        if current and (starts or len(current) >= MAX_MESSAGES):
            out.append(current)
            current, answered = [], False
        current.append((i, message))
        answered = answered or message.role == "assistant"
    if current:
        out.append(current)
    return out


class TranscriptInput(UsageInput):
    """transcripts/index (reference §13.3): `sessionId`, `threadId` (aliases as in the
    scope), `agentWallet` and `messages[]` are required."""

    session_id: LooseId = Field(
        default=None,
        validation_alias="sessionId",
        max_length=512,
        description="Required: the transcript's id.",
    )
    messages: list[MessageInput] | None = Field(
        default=None,
        description=f"Required: at most {MAX_TRANSCRIPT_MESSAGES} per call; blank ones are "
        "dropped.",
    )
    remember_working_memory: Any = Field(
        default=True,
        validation_alias="rememberWorkingMemory",
        description="Must be true if given: working memory is always appended.",
    )

    ALIASES = (
        *UsageInput.ALIASES,
        Alias(("messages",), "null", list, "must be a non-empty array"),
    )

    @field_validator("messages", mode="before")
    @classmethod
    def _at_most(cls, value: object) -> object:
        if isinstance(value, list) and len(value) > MAX_TRANSCRIPT_MESSAGES:
            raise Refused(f"holds {len(value)} items; at most {MAX_TRANSCRIPT_MESSAGES} per call")
        return value

    @field_validator("remember_working_memory")
    @classmethod
    def _always(cls, value: object) -> object:
        """`rememberWorkingMemory: false` is refused: the thread's working buffer is always
        appended (pre_turn's working layer reads it), and ignoring it would surprise."""
        if value is not True:
            raise Refused("must be true: the thread's working memory is always appended")
        return value

    def turns(
        self, scope: Scope | None = None, *, now: datetime | None = None
    ) -> list[TurnRecorded]:
        """The turns to publish, oldest first, in `scope` (default: this body's, checked);
        `[]` when there is no user/assistant text (the reference's skip). A message without
        a timestamp takes `now` (default: the clock) plus its position, so the transcript's
        order survives; each turn's time is its newest message's. Every turn is checked to
        fit in one message before any is returned."""
        scope = scope or self.scope()
        if self.session_id is None:
            raise ScopeError("sessionId is required")
        if scope.thread_id is None:
            raise ScopeError("threadId is required")
        if self.messages is None:
            raise Refused("must be a non-empty array", "messages")
        parts = exchanges(self.messages)
        if not any(m.role in SPOKEN for part in parts for _, m in part):
            return []
        now_ms = event_time(now)[1]
        thread = f"{self.session_id}|{scope.thread_id}"
        tenant = f"{scope.agent_wallet}|{scope.user_address or ''}|{scope.mode or ''}"
        tenant += f"|{scope.hai_id or ''}"
        turns: list[TurnRecorded] = []
        for n, part in enumerate(parts):
            first = part[0][0]
            spoken = "\n".join(f"{m.role}:{m.content}" for _, m in part)
            timed = [
                m if m.timestamp is not None else m.model_copy(update={"timestamp": now_ms + i})
                for i, m in part
            ]
            metadata = {
                **(self.metadata or {}),
                "indexedFrom": "transcripts/index",
                "messageIndex": first,
            }
            # the turn's body, made of values this model checked: no second pass
            turn = TurnInput.model_construct(
                session_id=self.session_id,
                turn_id="turn_" + h32(f"transcript|{tenant}|{thread}|{first}|{h32(spoken)}"),
                messages=timed,
                model_used=self.model_used,
                total_tokens=self.total_tokens if n == 0 else None,
                metadata=metadata,
            )
            said_at = from_ms(max(m.timestamp or 0 for m in timed))
            in_scope = scope.model_copy(update={"filters": None, "metadata": metadata})
            turns.append(within_message_limit(turn.recorded(in_scope, now=said_at), "the turn"))
        return turns


def transcript_turns(body: object, *, now: datetime | None = None) -> list[TurnRecorded]:
    """transcripts/index body → the turns to publish (`TranscriptInput.turns`)."""
    return parse_body(TranscriptInput, body).turns(now=now)
