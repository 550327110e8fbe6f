"""The rule-based extractor itself: `extract_sync` reads the user's messages and a named
speaker's (not an unnamed assistant's, which echo recalled memory or guess), proposes facts
with the rules, attributes them to their speaker and selects them; `RuleBasedExtractor` is
the `Extractor` port over it."""

from __future__ import annotations

from collections.abc import Sequence

from engine.ingest.extraction.rules.reading import _candidates
from engine.ingest.extraction.rules.registry import _Candidate
from engine.ingest.extraction.rules.select import _assemble, _select
from engine.ingest.extraction.rules.speaker import attributed, speaker_of
from engine.ingest.extraction.types import Extraction, ExtractionPolicy, TurnText

NAME = "rules-v1"


def extract_sync(messages: Sequence[TurnText], policy: ExtractionPolicy) -> Extraction:
    """The facts, entities and relations the messages state about their speakers (pure;
    see the package docstring for what is read and how facts are selected)."""
    found: list[_Candidate] = []
    for message in messages:
        speaker = speaker_of(message)
        if speaker is not None:
            found.extend(attributed(c, speaker) for c in _candidates(message.content))
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
