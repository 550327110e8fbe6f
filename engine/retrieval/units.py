"""Messages as retrieval units: a turn is judged by its best message, and shown as that
message when the budget has no room for the whole turn (issue 16).

A stored turn's text is one "role: words" line per message (`engine.ingest.turns`: the
turn row's summary, the transcript's turn). Ranking a turn by its best message keeps a
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
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engine.ingest.message_units import messages_of, said, spoken
from engine.ports import Vector
from engine.records import MemoryRow
from engine.retrieval.lexical import Ids, Scores, all_terms, bm25_ids, term_ids

__all__ = ["Shown", "Unit", "message_scores", "messages_of", "pool_units", "said", "shown_units"]


OWN_SHARE = 0.5
"""A message unit's cosine is this share of its own (what it says, `MemoryRow.units`) and
the rest its turn's (the row's vector, speakers and all). The scene layer ranks the same
turns by whole-turn vectors, and MiniLM scores a question that names someone higher
against a text that names them too: on its own cosine alone a unit ranked below every
whole turn of the other layers. Half and half, the midpoint, was the only share tried in
the engine; by a simulation on the tune split (messages filling 900 / 1,800 characters)
it found 0.81 / 0.94 of the evidence, what messages say alone 0.86 / 0.98, whole turns
0.68 / 0.89."""


@dataclass(frozen=True, slots=True)
class _Split:
    """A text's messages, the term ids of each (speaker included), and the term ids of
    what each says (without its speaker)."""

    messages: tuple[str, ...]
    terms: tuple[Ids, ...]
    said: tuple[Ids, ...]


@functools.lru_cache(maxsize=32768)
def _split(text: str) -> _Split:
    """Memoised: a tenant's rows come back as candidates request after request, and
    splitting them again was a fifth of a cache miss's work at 10k rows."""
    messages = tuple(messages_of(text))
    return _Split(
        messages,
        tuple(term_ids(all_terms(m)) for m in messages),
        tuple(term_ids(all_terms(said(m))) for m in messages),
    )


def message_scores(query_terms: list[str], texts: Sequence[str]) -> list[list[tuple[str, float]]]:
    """Each text's messages with their BM25 relevance (speaker included) over every message
    of `texts` (the pool's statistics), in order."""
    split = [_split(t) for t in texts]
    scores = iter(bm25_ids(query_terms, [i for s in split for i in s.terms]).tolist())
    return [[(m, next(scores)) for m in s.messages] for s in split]


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
    the turn; a tie (or no match) shows the whole turn.

    Per turn the work is array-wide (a scene of 1,000 turns is scored a request: issue 29)."""
    split = [_split(t) for t in texts]
    sizes = np.fromiter((len(s.messages) for s in split), dtype=np.int64, count=len(split))
    scores = bm25_ids(query_terms, [i for s in split for i in s.terms])
    top = _segment_max(scores, sizes)
    # what each message of a turn of several says, without its speaker: which one is shown
    several = sizes > 1
    alone = np.full(len(split), -1)
    if several.any():
        counts = sizes[several]
        says = bm25_ids(query_terms, [i for s in split if len(s.messages) > 1 for i in s.said])
        starts = np.cumsum(counts) - counts
        best = np.maximum.reduceat(says, starts)  # every run here holds two or more
        at_best = says == np.repeat(best, counts)
        ties = np.add.reduceat(at_best.astype(np.int64), starts)
        # shown alone only when what it says beats every other message of the turn (a
        # tie, or a match on the speaker's name alone: the whole turn)
        single = (best > 0) & (ties == 1)
        where = np.flatnonzero(at_best & np.repeat(single, counts))
        local = np.full(len(counts), -1)
        local[single] = where - np.repeat(starts, counts)[where]
        alone[several] = local
    out: list[Shown] = []
    for text, s, lexical, n in zip(texts, split, top.tolist(), alone.tolist(), strict=True):
        if n >= 0:
            out.append(Shown(lexical, s.messages[n], text))
        else:
            out.append(Shown(lexical, text, None))
    return out


def _segment_max(values: Scores, sizes: npt.NDArray[np.int64]) -> Scores:
    """The largest of each run of `sizes[i]` values (0.0 for a run of none)."""
    out = np.zeros(len(sizes))
    filled = sizes > 0
    if filled.any():
        out[filled] = np.maximum.reduceat(values, (np.cumsum(sizes) - sizes)[filled])
    return out


@dataclass(frozen=True, slots=True)
class Unit:
    """One candidate of a memory layer's pool: a whole row (`unit` None), or one message
    of a turn row that holds its message vectors (`MemoryRow.units`), judged by its own
    cosine and its own words."""

    row: int
    """Position of its row among the layer's candidates."""
    cosine: float | None
    shown: Shown
    unit: int | None = None


def pool_units(
    query_terms: list[str],
    query: Vector | None,
    model: str,
    candidates: Sequence[tuple[MemoryRow, float | None]],
) -> list[Unit]:
    """The candidates as retrieval units (issue 32): each message of a turn row with unit
    vectors of the query's model is a unit of its own, its cosine that of what it says and
    its lexical score its own BM25 (speaker included) over every message of the pool,
    shown as that message with the whole turn as its context. Any other row (a fact, a
    pending turn, one stored before units) is one unit, judged by its best message and
    shown as `shown_units` says, with the row's cosine."""
    texts = [row.content for row, _ in candidates]
    own = [_unit_cosines(row, query, model) for row, _ in candidates]
    plain = [i for i, cosines in enumerate(own) if cosines is None]
    if len(plain) == len(candidates):  # no row has units: one BM25 pass, as before them
        return [
            Unit(i, cosine, shown)
            for i, ((_, cosine), shown) in enumerate(
                zip(candidates, shown_units(query_terms, texts), strict=True)
            )
        ]
    by_message = message_scores(query_terms, texts)
    shown_plain = dict(zip(plain, shown_units(query_terms, [texts[i] for i in plain]), strict=True))
    out: list[Unit] = []
    for i, ((row, cosine), messages, cosines) in enumerate(
        zip(candidates, by_message, own, strict=True)
    ):
        if cosines is None:
            out.append(Unit(i, cosine, shown_plain[i]))
            continue
        context = row.content if len(messages) > 1 else None
        if cosine is not None:
            cosines = OWN_SHARE * cosines + (1 - OWN_SHARE) * cosine
        out.extend(
            Unit(i, float(c), Shown(lexical, spoken(text), context), n)
            for n, ((text, lexical), c) in enumerate(zip(messages, cosines, strict=True))
        )
    return out


def _unit_cosines(row: MemoryRow, query: Vector | None, model: str) -> Vector | None:
    """The cosine of each of the row's unit vectors with the query, or None when they
    cannot be compared: another model or dimension, or not one per message of its text."""
    units = row.units
    if (
        query is None
        or units is None
        or units.ndim != 2
        or row.embedding_model != model
        or units.shape[1] != query.shape[0]
        or units.shape[0] != len(_split(row.content).messages)
        or units.shape[0] == 0
    ):
        return None
    cosines: Vector = units @ query
    return cosines
