"""A book read as "it" (issue 32): "Thisbe lent me Ashes of Verrin and I read it in two
nights", "Rebecca is so good, I read it last summer". When the speaker says "I read it"
("finished it", "reread it"…), the name said last before "it" in that sentence, among
those the turn links to the speaker there, is what the speaker read: the untyped link
becomes `READ`. A person's name is never read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.ingest.extraction.rules.speaker import words_by_speaker
from engine.ingest.extraction.types import UNTYPED, ExtractedRelation, TurnText

READ_IT = re.compile(
    r"\b(?:i|we)\s+(?:\w+\s+)?(?:read|reread|re-read|finished|devoured)\s+it\b", re.IGNORECASE
)
_PEOPLE = frozenset({"person", "pet"})


def read_it(
    messages: Sequence[TurnText],
    relations: Sequence[ExtractedRelation],
    kinds: dict[str, str],
) -> list[ExtractedRelation]:
    """`relations` with the speaker's untyped link to the name said last before "I read
    it" typed `READ` (see the module doc); `kinds` maps nodes to entity types."""
    said = words_by_speaker(messages)
    out = list(relations)
    for evidence in {r.evidence for r in relations if r.evidence}:
        it = READ_IT.search(evidence)
        if it is None:
            continue
        links = [
            (i, r, end, other)
            for i, r in enumerate(out)
            if r.type in UNTYPED and r.evidence == evidence
            for end, other in ((r.source, r.target), (r.target, r.source))
            if evidence in said.get(end.casefold(), "\0")
        ]
        best: tuple[int, int, str, str] | None = None
        for i, _, speaker, other in links:
            if kinds.get(other.casefold(), "name") in _PEOPLE:
                continue
            at = evidence.casefold().rfind(other.casefold(), 0, it.start())
            if at >= 0 and (best is None or at > best[0]):
                best = (at, i, speaker, other)
        if best is not None:
            _, i, speaker, other = best
            out[i] = ExtractedRelation(speaker, "READ", other, evidence)
    return out
