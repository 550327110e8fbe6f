"""Messages as retrieval units: a turn is judged by its best message, and shown as that
message when the budget has no room for the whole turn (issue 16).

A stored turn's text is one "role: words" line per message (`engine.ingest.turns`: the
session row's summary, the transcript's turn). Ranking a turn by its best message keeps a
question's words together ("What book has Omar been reading?" needs "book" and "Omar" in one
message, not "Omar" as the other speaker's name and "read" in this one), and the message
alone fits where the pair no longer does. The packer shows a turn whole while it fits: which
message of a turn answers, the words cannot always tell (an answer often repeats the
question's words; the statement that matters may share none of them).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.retrieval.lexical import all_terms, bm25

_ROLE_LINE = re.compile(r"^(?:user|assistant|tool|system):", re.IGNORECASE | re.MULTILINE)


def messages_of(text: str) -> list[str]:
    """The message lines of a turn's text, in order: a line opening with "user:",
    "assistant:", "tool:" or "system:" starts a message, other lines continue it. A text
    with no such line is one unit."""
    return [unit for unit, _ in _units(text)]


@functools.lru_cache(maxsize=32768)
def _units(text: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The text's messages with their terms. Memoised: a tenant's rows come back as
    candidates request after request, and splitting them again was a fifth of a cache
    miss's work at 10k rows."""
    starts = [m.start() for m in _ROLE_LINE.finditer(text)]
    if not starts or starts[0] != 0:
        starts = [0, *starts]
    bounds = [*starts, len(text)]
    units = (text[a:b].strip() for a, b in itertools.pairwise(bounds))
    return tuple((u, tuple(all_terms(u))) for u in units if u)


@dataclass(frozen=True, slots=True)
class Shown:
    """How a turn is ranked and shown. `lexical` is the BM25 relevance of its best
    message; `text` is that message when it alone holds the query's words (else the whole
    turn), and `context` the whole turn when `text` is only a part of it."""

    lexical: float
    text: str
    context: str | None


def shown_units(query_terms: list[str], texts: Sequence[str]) -> list[Shown]:
    """Each turn text judged by its messages: BM25 over every message of the candidates
    (the pool's statistics), a turn's lexical relevance that of its best message. A turn
    is shown as one message only when that message scores above every other message of
    the turn; a tie (or no match) shows the whole turn."""
    split = [_units(t) for t in texts]
    scores = bm25(query_terms, [words for units in split for _, words in units])
    out: list[Shown] = []
    i = 0
    for text, units in zip(texts, split, strict=True):
        own = scores[i : i + len(units)]
        i += len(units)
        if not units:
            out.append(Shown(0.0, text, None))
            continue
        top = max(own)
        best = own.index(top)
        # shown alone only when it beats every other message of the turn (a tie: whole)
        if len(units) > 1 and top > 0 and own.count(top) == 1:
            out.append(Shown(top, units[best][0], text))
        else:
            out.append(Shown(top, text, None))
    return out
