"""The post_turn body (reference §7.1) as one model, `TurnInput`, with its messages and tool
events (`MessageInput`, `ToolEventInput`; a transcript's messages are `MessageInput` too).
`TurnInput.recorded` makes the `TurnRecorded` event. The loose rules and the refusals are
`schemas.bodies`'. Times are milliseconds since epoch.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Self

from pydantic import AliasChoices, Field, field_validator, model_validator

from schemas.bodies import (
    Body,
    LooseId,
    Refused,
    ScopeInput,
    Text,
    Time,
    Tokens,
    drop_absent,
    json_type,
    require_object,
    within_message_limit,
)
from schemas.bounds import parse_contract
from schemas.events import UNKNOWN_STATUS, Message, ToolEvent, TurnRecorded, utc_now
from schemas.ids import from_ms, h32, thread_session_id, to_ms
from schemas.scope import Scope, ScopeError

ROLES = ("user", "assistant", "system", "tool")
TOOL_RESULT_CHARS = 2000


class MessageInput(Body):
    """One message of a turn or a transcript. `content` may be blank here (a transcript
    drops such a message; a turn refuses it)."""

    role: str | None = Field(
        default=None, validate_default=True, description="user, assistant, system or tool."
    )
    content: Text = None
    timestamp: Time = Field(default=None, description="ms since epoch or ISO-8601.")
    tool_calls: list[dict[str, Any]] | None = Field(
        default=None, validation_alias=AliasChoices("toolCalls", "tool_calls")
    )
    name: str | None = Field(default=None, description="The speaker's name (non-empty).")
    raw: str | None = Field(default=None, description="The caller's own form (non-empty).")

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        return drop_absent(require_object(data), ("toolCalls",))

    @field_validator("role")
    @classmethod
    def _role(cls, value: str | None) -> str | None:
        if value not in ROLES:
            raise Refused("is invalid")
        return value

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise Refused("must be a non-empty string")
        return value.strip() if value is not None else None

    @field_validator("raw")
    @classmethod
    def _raw(cls, value: str | None) -> str | None:
        if value == "":
            raise Refused("must be a non-empty string")
        return value

    def message(self, default_ms: int) -> Message:
        """The contract (`timestamp` absent ⇒ `default_ms`); content must be present."""
        return parse_contract(
            Message,
            {
                "role": self.role,
                "content": self.content,
                "timestamp": default_ms if self.timestamp is None else self.timestamp,
                "tool_calls": self.tool_calls,
                "name": self.name,
                "raw": self.raw,
            },
        )


class ToolEventInput(Body):
    """One tool call of the turn; its `status` feeds the patterns' success rates."""

    name: Text = Field(
        default=None,
        validation_alias=AliasChoices("name", "toolName", "tool"),
        description="Required (aliases toolName, tool).",
    )
    args: dict[str, Any] | None = Field(
        default=None,
        validation_alias=AliasChoices("args", "input"),
        description="Alias input. Default {}.",
    )
    status: Text = Field(
        default=None,
        description="completed/ok/success/… count as success, unknown (the default when "
        "absent) moves no success rate, any other word is a failure.",
    )
    result: str | None = Field(
        default=None,
        validation_alias=AliasChoices("result", "output"),
        description=f"Alias output; the first {TOOL_RESULT_CHARS} characters are kept.",
    )
    timestamp: Time = Field(default=None, description="ms since epoch or ISO-8601.")

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        data = drop_absent(require_object(data), ("name", "toolName", "tool"))
        for key in ("args", "input"):
            if data.get(key) is not None:
                if not isinstance(data[key], dict):
                    raise Refused("must be an object", key)
                break
        status = data.get("status")
        if status is not None and not isinstance(status, str):
            raise Refused("must be a string", "status")
        return drop_absent(data, ("args", "input"))

    @model_validator(mode="after")
    def _named(self) -> Self:
        if self.name is None:
            raise Refused("is required", "name")
        return self

    def tool_event(self, default_ms: int) -> ToolEvent:
        return parse_contract(
            ToolEvent,
            {
                "name": self.name,
                "args": self.args or {},
                "status": self.status or UNKNOWN_STATUS,
                "result": self.result[:TOOL_RESULT_CHARS] if self.result is not None else None,
                "timestamp": default_ms if self.timestamp is None else self.timestamp,
            },
        )


class TurnInput(ScopeInput):
    """post_turn (reference §7.1): `messages`, or `userMessage` + `assistantMessage`."""

    occurred_at: Time = Field(
        default=None,
        validation_alias=AliasChoices("occurredAt", "occurred_at"),
        description="ISO-8601 or ms since epoch (alias occurred_at). Default: now.",
    )
    messages: list[MessageInput] | None = None
    user_message: Text = Field(default=None, validation_alias="userMessage")
    assistant_message: Text = Field(default=None, validation_alias="assistantMessage")
    tool_events: list[ToolEventInput] | None = Field(
        default=None,
        validation_alias=AliasChoices("toolEvents", "tool_events"),
        description="A list of tool events (an object is refused), at most 200 "
        "(alias tool_events).",
    )
    session_id: LooseId = Field(default=None, validation_alias="sessionId")
    turn_id: LooseId = Field(
        default=None,
        validation_alias="turnId",
        description="Default: a hash of the session, thread, time and messages.",
    )
    context_id: LooseId = Field(default=None, validation_alias="contextId")
    summary: Text = None
    total_tokens: Tokens | None = Field(
        default=None,
        validation_alias=AliasChoices("totalTokens", "tokenCount"),
        description="Alias tokenCount. Default 0.",
    )
    model_used: Text = Field(
        default=None,
        validation_alias=AliasChoices("modelUsed", "model"),
        description='Alias model. Default "external".',
    )
    context_window: Tokens | None = Field(default=None, validation_alias="contextWindow")

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        data = drop_absent(
            require_object(data),
            ("occurredAt", "occurred_at"),
            ("modelUsed", "model"),
            ("totalTokens", "tokenCount"),
        )
        for key in ("toolEvents", "tool_events"):
            if data.get(key) is not None:
                if not isinstance(data[key], list):
                    problem = f"must be a list of tool events, not {json_type(data[key])}"
                    raise Refused(problem, key)
                break
        return drop_absent(data, ("toolEvents", "tool_events"))

    def _said(self) -> None:
        """What a turn must say. Checked when the event is made, after the caller's scope
        was allowed: a credential is refused another tenant's turn (403) whatever it says."""
        if self.messages is None:
            if self.user_message is None or self.assistant_message is None:
                raise Refused("messages or userMessage plus assistantMessage are required")
            return
        for i, message in enumerate(self.messages):
            if message.content is None:
                raise Refused("is required", f"messages[{i}].content")

    def recorded(self, scope: Scope | None = None, *, now: datetime | None = None) -> TurnRecorded:
        """The `TurnRecorded` event (reference §7.1 steps 1-5), in `scope` (default: this
        body's, checked). Its time is `now` when given, else `occurredAt`, else the clock.

        `turnId` defaults to a hash of (sessionId, threadId, occurred_at, the messages), so
        the same body published twice with the same `occurredAt` is the same turn, while two
        different turns of a thread in the same millisecond are not (the reference hashed
        sessionId|threadId|now only, and turn ids deduplicate writes)."""
        scope = scope or Scope.parse(self.scope_keys())
        self._said()
        given = from_ms(self.occurred_at) if self.occurred_at is not None else None
        occurred = now or given or utc_now()
        now_ms = to_ms(occurred)
        if self.messages is None:  # at the last millisecond of the range, the answer is out
            messages = [
                parse_contract(Message, {"role": r, "content": c, "timestamp": now_ms + n})
                for n, (r, c) in enumerate(
                    (("user", self.user_message), ("assistant", self.assistant_message))
                )
            ]
        else:
            messages = [m.message(now_ms + i) for i, m in enumerate(self.messages)]
        tools = [t.tool_event(now_ms + i) for i, t in enumerate(self.tool_events or ())]
        if self.session_id is None and scope.thread_id is None:
            raise ScopeError("threadId or sessionId is required")
        session_id = self.session_id or thread_session_id(scope)
        thread_id = scope.thread_id or session_id
        spoken = "\n".join(f"{m.role}:{m.content}" for m in messages)
        turn_id = self.turn_id or "turn_" + h32(f"{session_id}|{thread_id}|{now_ms}|{h32(spoken)}")
        event = parse_contract(
            TurnRecorded,
            {
                "occurred_at": occurred,
                "scope": scope,
                "session_id": session_id,
                "thread_id": thread_id,
                "turn_id": turn_id,
                "context_id": self.context_id,
                "messages": messages,
                "tool_events": tools,
                "summary": self.summary,
                "total_tokens": self.total_tokens or 0,
                "model_used": self.model_used or "external",
                "context_window": self.context_window or 0,
                "metadata": self.metadata or {},
            },
        )
        return within_message_limit(event, "the turn")
