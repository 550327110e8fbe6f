"""What the MCP tools answer: frozen models, published as each tool's output schema. Times are
ISO-8601 in UTC; scores are a layer's relevance in [0, 1], higher is more relevant."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.ids import from_ms


def iso(ms: int | None) -> str | None:
    """ISO-8601 (UTC) of milliseconds since epoch."""
    return None if ms is None else from_ms(ms).isoformat().replace("+00:00", "Z")


FactType = Literal["preference", "identity", "context", "skill", "relationship", "event"]
"""What kind of fact a remembered one is (`remember` takes it and answers it; a fact
remembered without one is a `context` fact)."""


class Answer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Remembered(Answer):
    """A fact accepted for storage: it is written asynchronously, and recall finds it once
    the consumer groups have stored it."""

    id: str = Field(
        description="The memory item's id (forget takes it); the same fact "
        "remembered again names the same item."
    )
    content: str
    type: FactType = Field(
        description="The type it is stored with (`context` when none was given)."
    )
    pinned: bool
    event_id: str


class TurnStored(Answer):
    """A turn accepted for storage (transcript, working memory, facts, patterns)."""

    turn_id: str
    thread_id: str
    session_id: str
    event_id: str


class MemoryItem(Answer):
    """One hit of one memory layer."""

    layer: str = Field(description="working, scene, graph, patterns, archives or vectors.")
    id: str | None = None
    text: str
    score: float | None = Field(default=None, description="The layer's relevance in [0, 1].")
    source: str | None = None
    created_at: str | None = None


class Recalled(Answer):
    """The packed memory context for a query: `context` is the text to put in the prompt
    (empty when nothing relevant is stored), `items` what it is made of, best first."""

    context: str
    items: list[MemoryItem]
    characters: int
    budget_chars: int


class Found(Answer):
    """Every hit of the searched layers, best first; `totals` counts them per layer."""

    items: list[MemoryItem]
    totals: dict[str, int]


class Forgotten(Answer):
    """What was forgotten: one item (`item_id`), or all of the user's memory (`erased`
    counts the removed records by kind)."""

    item_id: str | None = None
    hard: bool = False
    erased: dict[str, int] | None = None


class Fact(Answer):
    """A fact with its validity: true from `valid_from`, until `valid_until` when a later
    fact replaced it (`superseded_by`)."""

    id: str
    text: str
    type: str | None = None
    valid_from: str | None
    valid_until: str | None = None
    superseded_by: str | None = None
    current: bool


class Facts(Answer):
    """The newest facts first: the current ones, or with `as_of` those true then."""

    as_of: str | None = None
    facts: list[Fact]
