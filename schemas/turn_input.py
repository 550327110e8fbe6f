"""The post_turn body (reference §7.1) as one model, `TurnInput`, with its messages and tool
events (`MessageInput`, `ToolEventInput`; a transcript's messages are `MessageInput` too).
`TurnInput.recorded` makes the `TurnRecorded` event. The loose rules and the refusals are
`schemas.bodies`'. Times are milliseconds since epoch.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AliasChoices, Field, StringConstraints, field_validator

from schemas.bodies import (
    OCCURRED_AT,
    SCOPE_ALIASES,
    Alias,
    Body,
    LooseId,
    OccurredAt,
    Refused,
    ScopeInput,
    Text,
    Time,
    Tokens,
)
from schemas.bounds import MAX_TIME_MS, ValueOutOfRange
from schemas.events import (
    MAX_CONTENT_CHARS,
    MAX_MESSAGES,
    MAX_SPEAKER_CHARS,
    MAX_TOOL_CALLS,
    UNKNOWN_STATUS,
    Message,
    Role,
    ToolCall,
    ToolEvent,
    TurnRecorded,
)
from schemas.ids import event_time, h32, thread_session_id
from schemas.limits import DocumentObject
from schemas.scope import Scope, ScopeError

ROLES = ("user", "assistant", "system", "tool")
TOOL_RESULT_CHARS = 2000


class MessageInput(Body):
    """One message of a turn or a transcript. `content` may be blank here (a transcript
    drops such a message; a turn refuses it). Every bound of the `Message` contract is
    checked here, so the contract is made from it without a second pass."""

    role: Role | None = Field(
        default=None, validate_default=True, description="user, assistant, system or tool."
    )
    content: Text = Field(default=None, max_length=MAX_CONTENT_CHARS)
    timestamp: Time = Field(default=None, description="ms since epoch or ISO-8601.")
    tool_calls: list[ToolCall] | None = Field(
        default=None,
        validation_alias=AliasChoices("toolCalls", "tool_calls"),
        max_length=MAX_TOOL_CALLS,
    )
    name: Annotated[str, StringConstraints(strip_whitespace=True)] | None = Field(
        default=None, max_length=MAX_SPEAKER_CHARS, description="The speaker's name (non-empty)."
    )
    raw: str | None = Field(
        default=None,
        max_length=MAX_CONTENT_CHARS,
        description="The caller's own form (non-empty).",
    )

    ALIASES = (Alias(("toolCalls",)),)

    @field_validator("role", mode="before")
    @classmethod
    def _role(cls, value: object) -> object:
        if value not in ROLES:
            raise Refused("is invalid")
        return value

    @field_validator("name", "raw")
    @classmethod
    def _given(cls, value: str | None) -> str | None:
        """A speaker's name (trimmed already) or a raw form: absent, or not empty."""
        if value == "":
            raise Refused("must be a non-empty string")
        return value

    def message(self, default_ms: int, where: str = "message") -> Message:
        """The contract (`timestamp` absent ⇒ `default_ms`), made without a second pass:
        this model checked every bound. A turn's message must say something: `ScopeError`
        ("`where`.content is required") when its content is absent."""
        if self.content is None or self.role is None:  # the role is never None (`_role`)
            raise Refused("is required", f"{where}.content")
        return Message.model_construct(
            role=self.role,
            content=self.content,
            timestamp=default_ms if self.timestamp is None else self.timestamp,
            tool_calls=self.tool_calls,
            name=self.name,
            raw=self.raw,
        )


class ToolEventInput(Body):
    """One tool call of the turn; its `status` feeds the patterns' success rates."""

    name: Text = Field(
        default=None,
        validation_alias=AliasChoices("name", "toolName", "tool"),
        max_length=200,
        description="Required (aliases toolName, tool).",
    )
    args: DocumentObject | None = Field(
        default=None,
        validation_alias=AliasChoices("args", "input"),
        description="Alias input. Default {}.",
    )
    status: Text = Field(
        default=None,
        max_length=64,
        description="completed/ok/success/… count as success, unknown (the default when "
        "absent) moves no success rate, any other word is a failure.",
    )
    result: str | None = Field(
        default=None,
        validation_alias=AliasChoices("result", "output"),
        description=f"Alias output; the first {TOOL_RESULT_CHARS} characters are kept.",
    )
    timestamp: Time = Field(default=None, description="ms since epoch or ISO-8601.")

    ALIASES = (
        Alias(("name", "toolName", "tool")),
        Alias(("args", "input"), "null", dict, "must be an object"),
        Alias(("status",), "null", str, "must be a string"),
    )

    def tool_event(self, default_ms: int, where: str = "toolEvent") -> ToolEvent:
        """The contract, made without a second pass (this model checked every bound); a tool
        event must be named: `ScopeError` ("`where`.name is required") otherwise."""
        if self.name is None:
            raise Refused("is required", f"{where}.name")
        return ToolEvent.model_construct(
            name=self.name,
            args=self.args or {},
            status=self.status or UNKNOWN_STATUS,
            result=self.result[:TOOL_RESULT_CHARS] if self.result is not None else None,
            timestamp=default_ms if self.timestamp is None else self.timestamp,
        )


class UsageInput(ScopeInput):
    """The model a turn (or a transcript) was made with, and the tokens it took."""

    total_tokens: Tokens | None = Field(
        default=None,
        validation_alias=AliasChoices("totalTokens", "tokenCount"),
        description="Alias tokenCount. Default 0 (a transcript's count is its first turn's).",
    )
    model_used: Text = Field(
        default=None,
        validation_alias=AliasChoices("modelUsed", "model"),
        max_length=200,
        description='Alias model. Default "external".',
    )

    ALIASES = (
        *SCOPE_ALIASES,
        Alias(("modelUsed", "model")),
        Alias(("totalTokens", "tokenCount")),
    )


class TurnInput(UsageInput):
    """post_turn (reference §7.1): `messages`, or `userMessage` + `assistantMessage`."""

    occurred_at: OccurredAt = None
    messages: list[MessageInput] | None = Field(default=None, max_length=MAX_MESSAGES)
    user_message: Text = Field(
        default=None, validation_alias="userMessage", max_length=MAX_CONTENT_CHARS
    )
    assistant_message: Text = Field(
        default=None, validation_alias="assistantMessage", max_length=MAX_CONTENT_CHARS
    )
    tool_events: list[ToolEventInput] | None = Field(
        default=None,
        max_length=MAX_MESSAGES,
        validation_alias=AliasChoices("toolEvents", "tool_events"),
        description="A list of tool events (an object is refused), at most 200 "
        "(alias tool_events).",
    )
    session_id: LooseId = Field(default=None, validation_alias="sessionId", max_length=512)
    turn_id: LooseId = Field(
        default=None,
        validation_alias="turnId",
        max_length=128,
        description="Default: a hash of the session, thread, time and messages.",
    )
    context_id: LooseId = Field(default=None, validation_alias="contextId", max_length=128)
    summary: Text = Field(default=None, max_length=MAX_CONTENT_CHARS)
    context_window: Tokens | None = Field(default=None, validation_alias="contextWindow")

    ALIASES = (
        *UsageInput.ALIASES,
        OCCURRED_AT,
        Alias(
            ("toolEvents", "tool_events"),
            "null",
            list,
            "must be a list of tool events, not {given}",
        ),
    )

    def recorded(self, scope: Scope | None = None, *, now: datetime | None = None) -> TurnRecorded:
        """The `TurnRecorded` event (reference §7.1 steps 1-5), in `scope` (default: this
        body's, checked). Its time is `now` when given, else `occurredAt`, else the clock.

        `turnId` defaults to a hash of (sessionId, threadId, occurred_at, the messages), so
        the same body published twice with the same `occurredAt` is the same turn, while two
        different turns of a thread in the same millisecond are not (the reference hashed
        sessionId|threadId|now only, and turn ids deduplicate writes). Whether it fits in
        one message is checked once, where it is serialised (`schemas.bodies.message_json`,
        the SDK's publish)."""
        scope = scope or self.scope()
        occurred, now_ms = event_time(now, self.occurred_at)
        # what a turn must say is checked here, after the caller's scope was allowed: a
        # credential is refused another tenant's turn (403) whatever it says
        if self.messages is None:
            user, assistant = self.user_message, self.assistant_message
            if user is None or assistant is None:
                raise Refused("messages or userMessage plus assistantMessage are required")
            messages = [
                Message.model_construct(role="user", content=user, timestamp=now_ms),
                Message.model_construct(role="assistant", content=assistant, timestamp=now_ms + 1),
            ]
        elif not self.messages:
            raise Refused(": List should have at least 1 item after validation, not 0", "messages")
        else:
            messages = [
                m.message(now_ms + i, f"messages[{i}]") for i, m in enumerate(self.messages)
            ]
        tools = [
            t.tool_event(now_ms + i, f"toolEvents[{i}]")
            for i, t in enumerate(self.tool_events or ())
        ]
        if now_ms + max(len(messages), len(tools)) - 1 > MAX_TIME_MS:
            raise ValueOutOfRange(
                "occurredAt leaves no millisecond for each message and tool event before "
                f"{MAX_TIME_MS}"
            )
        if self.session_id is None and scope.thread_id is None:
            raise ScopeError("threadId or sessionId is required")
        session_id = self.session_id or thread_session_id(scope)
        thread_id = scope.thread_id or session_id
        spoken = "\n".join(f"{m.role}:{m.content}" for m in messages)
        turn_id = self.turn_id or "turn_" + h32(f"{session_id}|{thread_id}|{now_ms}|{h32(spoken)}")
        # every field was checked by this model (and the scope by `Scope`): no second pass
        event = TurnRecorded.model_construct(
            occurred_at=occurred,
            scope=scope,
            session_id=session_id,
            thread_id=thread_id,
            turn_id=turn_id,
            context_id=self.context_id,
            messages=messages,
            tool_events=tools,
            summary=self.summary,
            total_tokens=self.total_tokens or 0,
            model_used=self.model_used or "external",
            context_window=self.context_window or 0,
            metadata=self.metadata or {},
        )
        return event  # its size is checked where it is serialised: the publish
