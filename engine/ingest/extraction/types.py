"""Extraction results and the `Extractor` port."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

FactType = Literal["preference", "identity", "context", "skill", "relationship", "event"]
FACT_TYPES: tuple[FactType, ...] = (
    "preference",
    "identity",
    "context",
    "skill",
    "relationship",
    "event",
)


@dataclass(frozen=True, slots=True)
class ExtractedFact:
    """One durable, standalone fact about the user, phrased in the third person or as a
    plain statement ("The user lives in Porto.").

    `confidence` is in [0, 1]: how sure the extractor is that the turn states this fact.
    `slot` names the attribute the fact sets, when it is a single-valued one — e.g.
    "residence", "employer", "name", "preference:coffee" — so a later fact with the same slot
    and a different text replaces it (contradiction over time). None for facts that
    accumulate (skills, events, most relationships)."""

    text: str
    type: FactType
    confidence: float
    slot: str | None = None


@dataclass(frozen=True, slots=True)
class ExtractedEntity:
    """A named thing the turn mentions: a person, place, organisation, pet, project, tool…
    `name` is as written; dedupe uses the normalised (case- and space-insensitive) name."""

    name: str
    type: str
    summary: str = ""


@dataclass(frozen=True, slots=True)
class ExtractedRelation:
    """A directed, typed link between two entities named in the same extraction, e.g.
    ("Ana", "SISTER_OF", "user") or ("user", "LIVES_IN", "Porto"). The user is the entity
    named "user" (type "person")."""

    source: str
    type: str
    target: str
    evidence: str = ""
    """The sentence that states the link, as said ("" when the extractor gave none)."""


MENTIONS_TYPE = "MENTIONS"
"""An untyped link (`engine.ingest.extraction.links`): a speaker's node → a name they
mentioned speaking of themselves."""
RELATED_TYPE = "RELATED"
"""An untyped link: a name → another name of the same sentence."""
UNTYPED = frozenset({MENTIONS_TYPE, RELATED_TYPE})


@dataclass(frozen=True, slots=True)
class Extraction:
    facts: list[ExtractedFact] = field(default_factory=list)
    entities: list[ExtractedEntity] = field(default_factory=list)
    relations: list[ExtractedRelation] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ExtractionPolicy:
    """Limits every extractor honours (reference §7.3 defaults)."""

    max_facts: int = 5
    min_confidence: float = 0.6
    max_chars: int = 240


@dataclass(frozen=True, slots=True)
class TurnText:
    """What an extractor reads: the turn's user/assistant messages, oldest first.
    `speaker` is the speaker's name when the turn names it (`engine.ingest.speakers`), and
    `content` is then the words without a leading "Name: "; None leaves it to `role`."""

    role: str
    content: str
    speaker: str | None = None


class Extractor(Protocol):
    """Extracts durable facts about the user from one turn.

    `name` identifies the extractor (and model) and is stored on every fact. Raises
    `engine.errors.DependencyFailed` when a remote extractor fails or answers malformed
    output (the caller retries, then dead-letters); never returns facts below
    `policy.min_confidence`, longer than `policy.max_chars` or more than `policy.max_facts`.
    """

    @property
    def name(self) -> str: ...

    async def extract(
        self, messages: Sequence[TurnText], policy: ExtractionPolicy
    ) -> Extraction: ...
