"""Messages as retrieval units: a turn is judged by its best message, and shown as that
message when the budget has no room for the whole turn (issue 16).

A stored turn's text is one "role: words" line per message (`engine.ingest.turns`: the
session row's summary, the transcript's turn). Ranking a turn by its best message keeps a
question's words together ("What book has Omar been reading?" needs "book" and "Omar" in one
message, not "Omar" as the other speaker's name and "read" in this one), and the message
alone fits where the pair no longer does. The packer shows a turn whole while it fits: which
message of a turn answers, the words cannot always tell (an answer often repeats the
question's words; the statement that matters may share none of them).

A message's speaker ("user: Caroline: ..." — the runtime's `name`, or a leading "Name:")
counts toward the turn's relevance, so a question about what Caroline said finds the turns
where she speaks; but a message is not shown alone for its speaker's name: in a
conversation about Caroline every line of hers holds "Caroline", and the line shown was
then the shortest one of hers, not the one the turn was found for (issue 32).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.retrieval.lexical import all_terms, bm25

_ROLE_LINE = re.compile(r"^(?:user|assistant|tool|system):", re.IGNORECASE | re.MULTILINE)
_SPEAKER = re.compile(r"^(?i:(?:user|assistant|tool|system):\s*)?(?:[A-Z][\w'.-]*\s?){1,3}:\s")
"""A message's opening "role: Name: " (one to three capitalised words)."""


def messages_of(text: str) -> list[str]:
    """The message lines of a turn's text, in order: a line opening with "user:",
    "assistant:", "tool:" or "system:" starts a message, other lines continue it. A text
    with no such line is one unit."""
    return [unit[0] for unit in _units(text)]


def said(message: str) -> str:
    """A message without its opening "role: Name: " (what it says, not who says it)."""
    return message[m.end() :] if (m := _SPEAKER.match(message)) else message


@functools.lru_cache(maxsize=32768)
def _units(text: str) -> tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]:
    """The text's messages with their terms, and the terms of what each says (without its
    speaker). Memoised: a tenant's rows come back as candidates request after request, and
    splitting them again was a fifth of a cache miss's work at 10k rows."""
    starts = [m.start() for m in _ROLE_LINE.finditer(text)]
    if not starts or starts[0] != 0:
        starts = [0, *starts]
    bounds = [*starts, len(text)]
    units = (text[a:b].strip() for a, b in itertools.pairwise(bounds))
    return tuple((u, tuple(all_terms(u)), tuple(all_terms(said(u)))) for u in units if u)


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
    scores = bm25(query_terms, [u[1] for units in split for u in units])
    several = [u[2] for units in split if len(units) > 1 for u in units]
    # what each message says, without its speaker: which message is shown alone
    saying = iter(bm25(query_terms, several) if several else [])
    out: list[Shown] = []
    i = 0
    for text, units in zip(texts, split, strict=True):
        own = scores[i : i + len(units)]
        i += len(units)
        if not units:
            out.append(Shown(0.0, text, None))
            continue
        top = max(own)
        if len(units) == 1:
            out.append(Shown(top, text, None))
            continue
        says = [next(saying) for _ in units]
        best = max(says)
        # shown alone only when what it says beats every other message of the turn (a
        # tie, or a match on the speaker's name alone: the whole turn)
        if best > 0 and says.count(best) == 1:
            out.append(Shown(top, units[says.index(best)][0], text))
        else:
            out.append(Shown(top, text, None))
    return out
