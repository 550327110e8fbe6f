"""Reading a user message into clauses and running the rules over them: straighten quotes
and drop quoted speech, cut segments (sentences, `;`, `: `, dashes, line breaks), drop
questions and the questioning tail of "…, any tips?", cut clauses at conjunctions and new
subjects, drop matches in a conditional, modal, optional or reported piece, and multiply
hedged matches by `HEDGE_FACTOR`. `_candidates` returns every proposed fact in the order it
is said."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from engine.ingest.extraction.rules.lexicon import _FIRST_PERSON, _I
from engine.ingest.extraction.rules.registry import _RULES, _Candidate, _Clause, _Rule

HEDGE_FACTOR = 0.6
"""A hedged statement's confidence is multiplied by this (0.9 → 0.54)."""

_MODAL = re.compile(
    r"\b(?:if|unless|whether|might|maybe|perhaps|possibly|would|could|should|wish|hope|hoping"
    r"|someday|gonna|wanna|want\s+to|i'd|i'll|id\s+like|suppose|imagine|pretend|considering"
    r"|thinking\s+(?:about|of))\b|\bI\s+may\b"
    r"|\b(?:meant|supposed|planning|planned|plans?|about|trying|tried|intended|intending)\s+to\b"
    r"|\bgoing\s+to\s+(?:be|move|live|work|study|start|join)\b",
    _I,
)
"""A conditional, a modal, a wish, or a plan not (yet) carried out ("we were meant to move
to Coimbra", "I'm planning to join Orbis")."""
_HEDGE = re.compile(
    r"\b(?:I\s+think|I\s+guess|I\s+believe|I\s+feel\s+like|not\s+sure|kind\s+of|kinda|sort\s+of"
    r"|probably|apparently)\b",
    _I,
)
_REPORTED = re.compile(
    r"\b(?:says?|said|thinks?|thought|tells?|told|believes?|claims?|wrote|writes|swears?|swore"
    r"|reckons?|insists?|heard|rumou?r)\b",
    _I,
)
_QUESTION_OPENER = re.compile(
    r"^(?:(?:so|and|but|ok|okay|also|hey|hi|well|btw|oh|um)\b[,\s]*)*"
    r"(?:what|what's|whats|why|how|when|where|who|which|do|does|did|can|could|would|will"
    r"|should|is|are|am|was|were|have|has|any|isn't|aren't|don't|doesn't|didn't|won't|right"
    r"|or)\b",
    _I,
)
# A single-quoted span may hold apostrophes between letters ('Dad, I like it. It isn't far.').
_QUOTED = re.compile(r"\"[^\"]*\"|(?<!\w)'(?:[^']|(?<=\w)'(?=\w))*'(?!\w)")
_SEGMENT_BREAK = re.compile(r"(?<=[.!?])\s+|\n+|;\s*|\s+[—–-]\s+|\s*[—–]\s*|:\s+|…")
_ABBREVIATION = re.compile(r"\b(?:St|Dr|Mr|Mrs|Ms|Prof|Mt|Jr|Sr|vs|etc|e\.g|i\.e)\.$", _I)
_CLAUSE_BREAK = re.compile(
    r",?\s+(?:but|so|because|cause|even\s+though|though|although|whereas|while)\s+"
    rf"|,?\s+and\s+(?={_FIRST_PERSON}(?!\s+(?:are|were)\b))|,\s*(?={_FIRST_PERSON})"
    r"|,?\s+and\s+(?=(?:the|he|she|it|they|then|there|this|that)\b)",
    _I,
)
_QUESTION_PART = re.compile(r",\s*|\s+(?:but|so|and|or)\s+", _I)
_LOWERCASE_I = re.compile(r"(?:^|\s)i(?:'m|'ve|m)?\b")


def _segments(text: str) -> list[str]:
    """Sentences and other stand-alone pieces, quoted speech removed."""
    text = text.replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
    text = _QUOTED.sub(" ", text)
    out: list[str] = []
    for piece in _SEGMENT_BREAK.split(text):
        piece = piece.strip()
        if out and _ABBREVIATION.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        elif piece:
            out.append(piece)
    return out


def _statement(segment: str) -> str:
    """The declarative part of a segment: "" for a question, the part before the
    questioning clause of "…, any tips?"."""
    body = segment.strip().rstrip(".!?…~ ").strip()
    if _QUESTION_OPENER.match(body):
        return ""
    if not segment.rstrip().endswith("?"):
        return body
    cuts = [m.start() for m in _QUESTION_PART.finditer(body)]
    for start, end in zip([0, *cuts], [*cuts, len(body)], strict=True):
        part = _QUESTION_PART.sub("", body[start:end], count=1) if start else body[start:end]
        if start and _QUESTION_OPENER.match(part.strip()):
            return body[:start]
    return body[: cuts[-1]] if cuts else ""


def _guarded_piece(text: str, start: int) -> str:
    """The comma-delimited piece of `text` around `start`, plus a trailing conditional
    piece ("…, if all goes well"): what a modal or reporting verb can qualify. "I've got an
    interview on Tuesday, wish me luck" is not wishful about the interview."""
    left = text.rfind(",", 0, start) + 1
    right = text.find(",", start)
    if right < 0:
        return text[left:]
    rest = text[right + 1 :]
    tail = "," + rest if re.match(r"\s*(?:if|unless|provided)\b", rest, _I) else ""
    return text[left:right] + tail


def _weight(clause: str, start: int) -> float | None:
    """None when the match at `start` states no fact (conditional, modal, reported
    speech); else the confidence multiplier: `HEDGE_FACTOR` when the clause hedges, else 1."""
    piece = _guarded_piece(clause, start)
    # "…, or I can fly solo": one option among several is not a fact.
    if _MODAL.search(piece) or re.match(r"\s*or\b", piece, _I):
        return None
    reported = _REPORTED.search(piece)
    if reported and not re.search(r"\bI\s+(?:really\s+)?$", piece[: reported.start()], _I):
        return None
    return HEDGE_FACTOR if _HEDGE.search(clause) else 1.0


def states_fact(text: str, start: int) -> bool:
    """Whether what is said at `start` in `text` is stated as a fact: not conditional,
    modal, optional or reported (the guards every rule's match passes; a hedge still
    states)."""
    return _weight(text, start) is not None


def _apply(rule: _Rule, unit: _Clause) -> Iterable[tuple[int, _Candidate]]:
    """(match start, candidate) for every match of `rule` that the guards let through."""
    for match in rule.pattern.finditer(unit.text):
        weight = _weight(unit.text, match.start())
        if weight is None:
            continue
        for cand in rule.build(match, unit):
            yield match.start(), replace(cand, confidence=round(cand.confidence * weight, 3))


def _clauses(statement: str) -> list[tuple[int, str]]:
    """(offset, text) of each clause of a statement."""
    out, start = [], 0
    for brk in _CLAUSE_BREAK.finditer(statement):
        out.append((start, statement[start : brk.start()]))
        start = brk.end()
    return [*out, (start, statement[start:])]


def _candidates(message: str) -> list[_Candidate]:
    """Every fact the rules propose for one user message, in the order it is said."""
    lowercase_writer = _LOWERCASE_I.search(message) is not None
    out: list[_Candidate] = []
    for segment in _segments(message):
        statement = _statement(segment)
        if not statement:
            continue
        units = [(0, statement, True)] + [(o, c, False) for o, c in _clauses(statement)]
        said: list[tuple[int, int, _Candidate]] = []
        for offset, text, whole in units:
            unit = _Clause(text, lowercase_writer)
            for rule in _RULES:
                if rule.whole_segment != whole:
                    continue
                for at, cand in _apply(rule, unit):
                    said.append((offset + at, len(said), cand))
        out.extend(cand for _, _, cand in sorted(said, key=lambda item: item[:2]))
    return out
