"""The rule-based extractor itself: `extract_sync` reads only the user's messages (not the
assistant's, which echo recalled memory or guess), proposes facts with the rules and
selects them; `RuleBasedExtractor` is the `Extractor` port over it."""

from __future__ import annotations

from collections.abc import Sequence

from engine.ingest.extraction.rules.reading import _candidates
from engine.ingest.extraction.rules.registry import _Candidate
from engine.ingest.extraction.rules.select import _assemble, _select
from engine.ingest.extraction.types import Extraction, ExtractionPolicy, TurnText

NAME = "rules-v1"


def extract_sync(messages: Sequence[TurnText], policy: ExtractionPolicy) -> Extraction:
    """The facts, entities and relations the user's messages state (pure; see the package
    docstring for what is read and how facts are selected)."""
    found: list[_Candidate] = []
    for message in messages:
        if message.role.strip().lower() == "user":
            found.extend(_candidates(message.content))
    chosen = _select(found, policy)
    return _assemble(chosen)


class RuleBasedExtractor:
    """`Extractor` over `extract_sync`: English first-person rules, offline and
    deterministic. Never raises for any input text."""

    @property
    def name(self) -> str:
        return NAME

    async def extract(self, messages: Sequence[TurnText], policy: ExtractionPolicy) -> Extraction:
        return extract_sync(messages, policy)
