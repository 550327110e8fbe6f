"""The part of a long text that answers a query, cut to a character cap (issue 17 §4).

A knowledge chunk runs to 1,400 characters, and the packer caps an item at 500 by default:
cut at its head, a chunk the search found for its fifth sentence showed its first three. An
excerpt is the window of the text around the sentence that best matches the query's terms
(BM25 over the text's own sentences, so a rare word of the query outweighs a common one),
grown by whole neighbouring sentences while they fit, "..." marking each cut side.

Pure and deterministic. Lengths are `str` characters, as in `engine.retrieval.text.truncate`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.retrieval.lexical import all_terms, bm25
from engine.retrieval.text import truncate

ELLIPSIS = "..."
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`, in order, without surrounding whitespace: a
    sentence ends at ".", "!", "?" or ";" followed by whitespace, or at a line break."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in [*_SENTENCE_END.finditer(text), None]:
        end = len(text) if match is None else match.start()
        piece = text[start:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            spans.append((start + lead, start + len(piece.rstrip())))
        if match is not None:
            start = match.end()
    return spans


def _shown(text: str, start: int, end: int) -> str:
    return (ELLIPSIS if start > 0 else "") + text[start:end] + (ELLIPSIS if end < len(text) else "")


def _cost(text: str, start: int, end: int) -> int:
    return len(_shown(text, start, end))


def excerpt(text: str, query_terms: Sequence[str], max_chars: int) -> str:
    """`text` cut to at most `max_chars` characters around what answers the query.

    Text that fits is returned unchanged. Otherwise the sentence with the highest BM25 score
    for `query_terms` (the earliest among equals) is the anchor. With no matching sentence, or
    one that `truncate(text, max_chars)` already shows whole, the result is that head cut
    (so a text whose answer opens it reads as before). Else the anchor is shown with whole
    neighbouring sentences, the preceding and the following one in turn, while they fit; an
    anchor longer than the cap is cut to a window that starts a little before its first query
    term. A cut side is marked "..." (counted in the cap).
    """
    if len(text) <= max_chars:
        return text
    head = truncate(text, max_chars)
    spans = sentence_spans(text)
    terms = list(dict.fromkeys(query_terms))
    if not terms or len(spans) < 2 or max_chars <= 2 * len(ELLIPSIS):
        return head
    scores = bm25(terms, [all_terms(text[a:b]) for a, b in spans])
    best = max(range(len(spans)), key=lambda i: (scores[i], -i))
    if scores[best] <= 0:
        return head
    start, end = spans[best]
    if end <= max_chars - len(ELLIPSIS):
        return head
    if _cost(text, start, end) > max_chars:
        return _inside(text, start, end, terms, max_chars)
    first, last = best, best
    grown = True
    while grown:
        grown = False
        if first > 0 and _cost(text, spans[first - 1][0], spans[last][1]) <= max_chars:
            first, grown = first - 1, True
        if last < len(spans) - 1 and _cost(text, spans[first][0], spans[last + 1][1]) <= max_chars:
            last, grown = last + 1, True
    return _shown(text, spans[first][0], spans[last][1])


def _inside(text: str, start: int, end: int, terms: Sequence[str], max_chars: int) -> str:
    """A window of the sentence `text[start:end]` (longer than the cap) that starts a
    third of the room before the first word carrying a query term."""
    sentence = text[start:end].lower()
    wanted = set(terms)
    first = next(
        (m.start() for m in re.finditer(r"[^\W_]+", sentence) if set(all_terms(m[0])) & wanted),
        0,
    )
    room = max_chars - 2 * len(ELLIPSIS)
    left = max(start, min(start + first - room // 3, end - room))
    right = min(len(text), left + room)
    if right == len(text):
        # no cut at the end: the room of the closing marker goes to the text
        left = max(0, len(text) - (max_chars - len(ELLIPSIS)))
    elif left == 0:
        right = max_chars - len(ELLIPSIS)
    return _shown(text, left, right)
