"""A relative named in apposition (issue 32): "the guy next door, Orrin, lent us…", "an old
friend of mine, Leocadia, has been…". A noun phrase that says how someone is the
speaker's ("the guy next door": a neighbour; "a friend of mine", "an old colleague of
ours") set off by a comma beside a name makes that name the speaker's relative, when the
turn links the two ends in that sentence (`links`) and the speaker said it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.ingest.extraction.pairs import KIN_NOUN
from engine.ingest.extraction.rules.lexicon import KIN, relation_stem
from engine.ingest.extraction.rules.speaker import words_by_speaker
from engine.ingest.extraction.types import UNTYPED, ExtractedRelation, TurnText

_NEXT_DOOR = r"\bthe\s+(?:guy|man|woman|lady|couple|family|people|folks|kids?)\s+next\s+door"
_OF_MINE = rf"\b(?:a|an)\s+(?:[\w-]+\s+)?(?P<k>{KIN_NOUN})\s+of\s+(?:mine|ours)"
APPOSED = re.compile(rf"(?:{_NEXT_DOOR}|{_OF_MINE})", re.IGNORECASE)
"""A noun phrase saying how someone is the speaker's, without a possessive before it."""


def _noun(sentence: str, name: str) -> str | None:
    """The relative's noun when `name` is said beside `APPOSED`, set off by a comma."""
    written = re.escape(name)
    for m in APPOSED.finditer(sentence):
        after = re.match(rf"\s*,\s*{written}(?!\w)", sentence[m.end() :], re.IGNORECASE)
        before = re.search(rf"(?<!\w){written}\s*,\s*$", sentence[: m.start()], re.IGNORECASE)
        if after or before:
            word = " ".join((m.group("k") or "neighbour").casefold().split())
            return KIN.get(word, word)
    return None


def appositive_kin(
    messages: Sequence[TurnText], relations: Sequence[ExtractedRelation]
) -> list[ExtractedRelation]:
    """`relations` with each untyped link between a speaker and a name in apposition to
    `APPOSED` in that speaker's words typed `<NOUN>_OF` the speaker (see the module doc)."""
    said = words_by_speaker(messages)
    out = list(relations)
    for i, link in enumerate(out):
        if link.type not in UNTYPED or not link.evidence:
            continue
        for speaker, other in ((link.source, link.target), (link.target, link.source)):
            words = said.get(speaker.casefold())
            if words is None or link.evidence not in words:
                continue
            noun = _noun(link.evidence, other)
            if noun is not None:
                out[i] = ExtractedRelation(
                    other, f"{relation_stem(noun)}_OF", speaker, link.evidence
                )
                break
    return out
