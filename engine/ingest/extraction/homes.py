"""A home shared by the words "with <name>" (issue 32): "my daughter Jovana lives in Nantes
with her partner, Elouan", "my mother lives in Naples with my younger sister Rosaria". When
a sentence types one person `LIVES_IN` (or `LIVED_IN`) a place and names another person
right after the place, after "with" and at most three words ("her partner,", "my younger
sister"), the untyped link from that person to the place in that sentence gets the same
type: who lives somewhere with one lives there too. Nothing is typed without such a link
(the two ends said in one statement) or across sentences.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.ingest.extraction.types import UNTYPED, ExtractedRelation

HOMES = frozenset({"LIVES_IN", "LIVED_IN"})


def _with(place: str, name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(?<!\w){re.escape(place)}\s*,?\s+(?:now\s+)?with\s+(?:[\w'’-]+,?\s+){{0,3}}?"
        rf"{re.escape(name)}(?!\w)",
        re.IGNORECASE,
    )


def share_homes(relations: Sequence[ExtractedRelation]) -> list[ExtractedRelation]:
    """`relations` with each untyped link from a person to a place said "<place> with
    <person>" after another's home there typed as that home (see the module doc)."""
    out = list(relations)
    homes = [r for r in relations if r.type in HOMES and r.evidence]
    for home in homes:
        place = home.target.casefold()
        for i, link in enumerate(out):
            if link.type not in UNTYPED or link.evidence != home.evidence:
                continue
            ends = (link.source.casefold(), link.target.casefold())
            if place not in ends or home.source.casefold() in ends:
                continue
            name = link.target if ends[0] == place else link.source
            if _with(home.target, name).search(home.evidence):
                out[i] = ExtractedRelation(name, home.type, home.target, link.evidence)
    return out
