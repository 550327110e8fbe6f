"""Candidate pairs for relation typing (issue 32): for each untyped link the pipeline found
(`links`), where its two ends are said in its sentence, and the words that connect them.

An end is said where its name is written (case-insensitive, whole words), where the
speaker's first-person words are ("I", "my", "we"…; the sentence's start when it drops its
subject: "been at Quillon for a decade"), or where a pronoun refers to it: "he"/"she"/"his"/
"her" to the nearest person said before, "it"/"its" to the nearest organisation ("Teodor
used to live in Vilnius but he lives in Riga" has Teodor said twice). Of all the places the
two ends are said, the closest pair is kept, and a pair with another person or organisation
said between them is dropped: a relation joins neighbours ("my brother Tom works at
Halvorsen Marine" types Tom and Halvorsen Marine, not the user and Halvorsen Marine); so is
a place right after another place's comma ("based in Austin, Texas": Texas is Austin's
region, not a second seat).

`Pair.between` is the text between the two ends as written, `Pair.forward` whether the
link's source is said first. `kin_of` reads the one structure that names a relation by a
noun rather than a verb: a relative's noun (the rules' kin lexicon) between a possessor and
a name ("his daughter Mila", "Ola's mum Jadwiga", "my cat Miso").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.ingest.extraction.names import FIRST_PERSON, sentences
from engine.ingest.extraction.rules.lexicon import _KIN, _PARTNERS, _PEOPLE, _PETS

PERSONS = frozenset({"person", "name", "pet"})
"""Entity types that may be the subject of a person's relation ("name": not typed yet)."""
BLOCKERS = frozenset({"person", "name", "organisation"})
"""Types of a mention that, said between two ends, keeps them apart."""

_HE = re.compile(r"\b(?:he|she|his|her|him)\b", re.IGNORECASE)
_IT = re.compile(r"\b(?:it|its|it's)\b", re.IGNORECASE)
_KIN_WORDS = sorted(
    {*_PEOPLE.split(), "best friend", *_KIN, *_PARTNERS, *_PETS.split()},
    key=lambda w: (-len(w), w),
)
_KIN_NOUN = "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in _KIN_WORDS)
_KIN_BETWEEN = re.compile(
    rf"^(?:['’]s|,?\s*(?:my|our|his|her|their))\s+(?P<k>{_KIN_NOUN})\s*,?\s*$", re.IGNORECASE
)
"""Between a possessor and a name: "'s mum", "'s mum," ; after the speaker's "my": " cat"."""
_KIN_AFTER_MY = re.compile(rf"^\s*(?P<k>{_KIN_NOUN})\s*,?\s*$", re.IGNORECASE)
_KIN_AFTER_NAME = re.compile(rf"^\s*(?P<k>{_KIN_NOUN})\b", re.IGNORECASE)
_COPULA = re.compile(r"\b(?:is|was|be|being|been|are|were)\s*$|^\s*['’]s\s*$", re.IGNORECASE)
_REGION = re.compile(r"^\s*,\s*$")
_POSSESSIVES = frozenset({"my", "our", "his", "her", "their"})


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    pronoun: bool = False


@dataclass(frozen=True, slots=True)
class Pair:
    """Two ends of one untyped link, said in `sentence`: `between` the words that join
    them, `forward` True when the link's source is said first."""

    source: str
    target: str
    sentence: str
    between: str
    forward: bool
    first: Span
    second: Span


def _spans_of(name: str, sentence: str) -> list[Span]:
    pattern = re.compile(rf"(?<!\w){re.escape(name)}(?:['’]s)?(?!\w)", re.IGNORECASE)
    return [Span(m.start(), m.end()) for m in pattern.finditer(sentence)]


def _speaker_spans(sentence: str) -> list[Span]:
    spans = [Span(m.start(), m.end()) for m in FIRST_PERSON.finditer(sentence)]
    return spans or [Span(0, 0)]


def mentions(
    sentence: str, names: dict[str, str], speaker: str, people: dict[str, str]
) -> dict[str, list[Span]]:
    """Where each end is said in `sentence`, by case-folded node: `names` maps a node to its
    entity type; `speaker` is the node of the one who said it (its first-person words);
    `people` maps the speakers' nodes to their names as written ("user" → "Ola"). Pronouns
    go to the nearest fitting name said before them."""
    found: dict[str, list[Span]] = {speaker: _speaker_spans(sentence)}
    for name in names:
        if name not in people:
            found.setdefault(name, []).extend(_spans_of(name, sentence))
    for node, written in people.items():
        found.setdefault(node, []).extend(_spans_of(written, sentence))
    said = sorted((s.start, n) for n, spans in found.items() for s in spans if s.end > s.start)
    for pattern, kinds in ((_HE, PERSONS), (_IT, frozenset({"organisation"}))):
        for m in pattern.finditer(sentence):
            before = [n for at, n in said if at < m.start() and names.get(n, "person") in kinds]
            if before and before[-1] != speaker:
                found[before[-1]].append(Span(m.start(), m.end(), pronoun=True))
    return found


def pair_of(
    source: str,
    target: str,
    sentence: str,
    said: dict[str, list[Span]],
    names: dict[str, str],
) -> Pair | None:
    """The two ends where they are said closest, or None when one is not said or a person
    or an organisation is said between them."""
    best: tuple[int, Span, Span, bool] | None = None
    for a in said.get(source.casefold(), []):
        for b in said.get(target.casefold(), []):
            first, second = (a, b) if a.start <= b.start else (b, a)
            gap = second.start - first.end
            if second.pronoun:  # "he", "it" refer back: they open a clause, never end one
                continue
            if gap >= 0 and (best is None or gap < best[0]):
                best = (gap, first, second, a is first)
    if best is None:
        return None
    _, first, second, forward = best
    ends = {source.casefold(), target.casefold()}
    for name, spans in said.items():
        if name in ends or names.get(name, "person") not in BLOCKERS:
            continue
        if any(first.end <= s.start and s.end <= second.start for s in spans):
            return None
    between = sentence[first.end : second.start]
    for name, spans in said.items():  # "Austin, Texas": the region of the place before it
        if (
            names.get(name) == "place"
            and name not in ends
            and any(
                first.end <= s.start and _REGION.match(sentence[s.end : second.start])
                for s in spans
            )
        ):
            return None
    return Pair(source, target, sentence, between, forward, first, second)


def kin_of(pair: Pair) -> str | None:
    """The relative's noun when the pair reads "<possessor> <noun> <name>" (the possessor:
    "my", "his", "Ola's"…; the relative is the second end), or "<name> is <possessor>
    <noun>" ("Bram turns out to be Lotte's neighbour"; the relative is the first end),
    else None. Which end is the relative: `Pair.forward` of `kin_relative_first`."""
    text = pair.sentence
    opener = text[pair.first.start : pair.first.end].casefold()
    if opener.endswith(("'s", "’s")) or opener in _POSSESSIVES:
        m = _KIN_AFTER_MY.match(pair.between)
    else:
        m = _KIN_BETWEEN.match(pair.between)
    if m is None:
        closer = text[pair.second.start : pair.second.end].casefold()
        after = _KIN_AFTER_NAME.match(text[pair.second.end :])
        if not (_COPULA.search(pair.between) and closer.endswith(("'s", "’s")) and after):
            return None
        m = after
    word = " ".join(m.group("k").casefold().split())
    return _KIN.get(word, word)


def kin_relative_first(pair: Pair) -> bool:
    """Whether the relative `kin_of` names is the first end said ("<name> is X's <noun>")."""
    return _KIN_AFTER_MY.match(pair.between) is None and _KIN_BETWEEN.match(pair.between) is None


def sentence_of(text: str, evidence: str) -> str:
    """The sentence of `text` that `evidence` (a link's, maybe cut) starts."""
    head = evidence.rstrip("…")[:60]
    for sentence in sentences(text):
        if " ".join(sentence.split()).startswith(head):
            return " ".join(sentence.split())
    return evidence
