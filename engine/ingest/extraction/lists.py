"""Lists after a typed relation's end (issue 32): "i used to live in brighton, then bristol",
"I manage two juniors now, Dario and Femke", "we adopted Pesto and Gnocchi". A name said
as one more item of a list right after an end of a typed relation (`clauses.listed_after`:
", then", " and ", ", and", after a few words without a subject or another clause) is a
second end of the same relation, with the same other end, when the turn links the two
(untyped): that link becomes the typed relation. The item must be of the end's entity
type (or untyped), and no word after it opens a clause of its own ("…and Vancouver is
great").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.ingest.extraction.clauses import listed_after
from engine.ingest.extraction.types import UNTYPED, ExtractedRelation

_FOLLOWERS = frozenset(
    {"for", "in", "at", "on", "with", "to", "from", "too", "as", "now", "then", "still"}
    | {"also", "which", "who", "where", "and", "or"}
)
"""Words that may follow a list's item (no verb: the item is not a new clause's subject)."""
_WORD = re.compile(r"\s*([\w'’-]+|[^\w\s]|$)")


def _spans(name: str, sentence: str) -> list[tuple[int, int]]:
    pattern = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)", re.IGNORECASE)
    return [(m.start(), m.end()) for m in pattern.finditer(sentence)]


def _item_ends(after: str) -> bool:
    word = _WORD.match(after)
    follower = word.group(1).casefold() if word else ""
    return not follower[:1].isalpha() or follower in _FOLLOWERS or follower.endswith("ly")


def extend_lists(
    relations: Sequence[ExtractedRelation], kinds: dict[str, str]
) -> list[ExtractedRelation]:
    """`relations` with each untyped link that joins a typed relation's end to a list item
    after its other end typed as that relation (see the module doc). `kinds` maps a
    case-folded name to its entity type."""
    out = list(relations)
    typed = [r for r in relations if r.type not in UNTYPED and r.evidence]
    for i, link in enumerate(relations):
        if link.type not in UNTYPED or not link.evidence:
            continue
        ends = (link.source.casefold(), link.target.casefold())
        for r in typed:
            if r.evidence != link.evidence:
                continue
            for listed, other in ((r.target, r.source), (r.source, r.target)):
                if other.casefold() not in ends:
                    continue
                item = ends[1] if ends[0] == other.casefold() else ends[0]
                if item == listed.casefold() or not _same_kind(kinds, listed, item):
                    continue
                if _listed(r.evidence, listed, item):
                    a, b = (r.source, item) if listed is r.target else (item, r.target)
                    name = link.target if item == ends[1] else link.source
                    a, b = (a, name) if listed is r.target else (name, b)
                    out[i] = ExtractedRelation(a, r.type, b, r.evidence)
                    break
            if out[i] is not link:
                break
    return out


def _same_kind(kinds: dict[str, str], listed: str, item: str) -> bool:
    a, b = kinds.get(listed.casefold(), "name"), kinds.get(item, "name")
    return a == b or "name" in (a, b)


def _listed(sentence: str, listed: str, item: str) -> bool:
    for _, end in _spans(listed, sentence):
        for start, item_end in _spans(item, sentence):
            if start > end and listed_after(sentence[end:start], sentence[item_end:]):
                return _item_ends(sentence[item_end:])
    return False
