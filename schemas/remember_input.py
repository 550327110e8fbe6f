"""The remember body (reference §7.4) as one model, `RememberInput`; `RememberInput.remembered`
makes the `MemoryRemembered` event. The loose rules and the refusals are `schemas.bodies`'.
Times are milliseconds since epoch.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AliasChoices, BeforeValidator, Field, field_validator

from schemas.bodies import (
    OCCURRED_AT,
    SCOPE_ALIASES,
    Alias,
    OccurredAt,
    Refused,
    ScopeInput,
    Text,
)
from schemas.events import MemoryRemembered, memory_type_problem
from schemas.ids import event_time
from schemas.scope import Scope

DEFAULT_TYPE = "explicit_save"


def _ratio(value: object) -> object:
    """A confidence: a JSON number from 0 to 1 (`10**400`, which has no float, included)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Refused("must be a number from 0 to 1")
    if not 0 <= value <= 1:  # NaN too
        raise Refused(f"must be a number from 0 to 1, not {value}", out_of_range=True)
    return value


Confidence = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False), BeforeValidator(_ratio)]


class RememberInput(ScopeInput):
    """remember (reference §7.4): `content` (alias `fact`) is required."""

    content: Text = Field(
        default=None,
        validation_alias=AliasChoices("content", "fact"),
        max_length=4_000,
        description="Required (alias fact).",
    )
    type: Text = Field(default=None, description=f"One word; default {DEFAULT_TYPE}.")
    retention: Text = Field(default=None, max_length=32)
    confidence: Confidence | None = Field(default=None, description="From 0 to 1; default 1.")
    memory_scope: Text = Field(default=None, validation_alias="scope", max_length=64)
    conflict_policy: Text = Field(
        default=None,
        validation_alias=AliasChoices("conflictPolicy", "conflict_policy"),
        max_length=32,
        description="Alias conflict_policy.",
    )
    occurred_at: OccurredAt = None

    ALIASES = (
        *SCOPE_ALIASES,
        Alias(("content", "fact")),
        Alias(("conflictPolicy", "conflict_policy")),
        OCCURRED_AT,
    )

    @field_validator("type")
    @classmethod
    def _type(cls, value: str | None) -> str | None:
        if value is not None and (problem := memory_type_problem(value)) is not None:
            raise Refused(f": {problem}")
        return value

    def remembered(
        self, scope: Scope | None = None, *, now: datetime | None = None
    ) -> MemoryRemembered:
        """The `MemoryRemembered` event (reference §7.4 steps 1-4), in `scope` (default:
        this body's, checked); its time is `now`, else `occurredAt`, else the clock. The
        content is checked here, after the caller's scope was allowed (a credential is
        refused another tenant's fact, 403, whatever it says). Whether it fits in one
        message is checked where it is serialised (`schemas.bodies.message_json`)."""
        scope = scope or self.scope()
        if self.content is None:
            raise Refused("content is required")
        # every field was checked by this model (and the scope by `Scope`): no second pass
        event = MemoryRemembered.model_construct(
            occurred_at=event_time(now, self.occurred_at)[0],
            scope=scope,
            content=self.content,
            type=self.type or DEFAULT_TYPE,
            retention=self.retention,
            confidence=1.0 if self.confidence is None else float(self.confidence),
            conflict_policy=self.conflict_policy,
            memory_scope=self.memory_scope,
            metadata=self.metadata or {},
        )
        return event  # its size is checked where it is serialised: the publish
