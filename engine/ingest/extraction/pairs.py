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

from engine.ingest.extraction.clauses import (
    co_subject,
    dropped_subjects,
    opens_on,
    opens_own_clause,
    subject_in_later_clause,
)
from engine.ingest.extraction.names import FIRST_PERSON, sentences, subject_dropped
from engine.ingest.extraction.rules.lexicon import KIN, PARTNERS, PEOPLE, PETS

PERSONS = frozenset({"person", "name", "pet"})
"""Entity types that may be the subject of a person's relation ("name": not typed yet)."""
BLOCKERS = frozenset({"person", "name", "organisation"})
"""Types of a mention that, said between two ends, keeps them apart."""

_HE = re.compile(r"\b(?:he|she|his|her|him)\b", re.IGNORECASE)
_IT = re.compile(r"\b(?:it|its|it's|they|their|they're)\b", re.IGNORECASE)
_ARTICLE_BEFORE = re.compile(r"\b(?:the|a|an)\s+$", re.IGNORECASE)
"""A name after an article is not a person ("at the Valencia summit"): no "she" for it."""
_OBJECT_FORMS = frozenset({"me", "us", "my", "our", "mine", "ours"})
_KIN_WORDS = sorted(
    {*PEOPLE.split(), "best friend", *KIN, *PARTNERS, *PETS.split()},
    key=lambda w: (-len(w), w),
)
_KIN_NOUN = "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in _KIN_WORDS)
KIN_NOUN = _KIN_NOUN
"""A relative's, a peer's or a pet's noun, as a regular expression's alternatives."""
_MODIFIER = r"(?:(?!(?:and|or|but|at|in|from|is|was|best)\b)[\w-]+\s+)?"
"""One word before the relative's noun: "my older sister", "our new boss" (not "best": "best
friend" is a noun of its own)."""
_NAMED = r"\s*(?:,|\(|\s(?:named|called))?\s*$"
"""After the noun, before the name: nothing, a comma, "(", "named" or "called"."""
_KIN_BETWEEN = re.compile(
    rf"^(?:['’]s|,?\s*(?:my|our|his|her|their))\s+{_MODIFIER}(?P<k>{_KIN_NOUN}){_NAMED}",
    re.IGNORECASE,
)
"""Between a possessor and a name: "'s mum", "'s mum," ; after the speaker's "my": " cat"."""
_KIN_AFTER_MY = re.compile(
    rf"^\s*{_MODIFIER}(?P<k>{_KIN_NOUN}){_NAMED}"
    rf"|^\s*(?P<r>{_KIN_NOUN})\s+(?:at|from|in)\s.+\s(?:is|was)\s*$",
    re.IGNORECASE,
)
"""After the speaker's "my": " cat", " older sister", " dog named", or " manager at
Ferrovia Labs is" (the relative said after the place the noun is at)."""
_KIN_HAS = re.compile(
    rf"^\s*(?:have|has|had|got|adopted|own|owns)\s+(?:a|an|one|two|three|four)\s+{_MODIFIER}"
    rf"(?P<k>{_KIN_NOUN})s?(?:\s+(?:named|called)|(?:\s+[\w'’-]+){{0,4}}\s*,)\s*$",
    re.IGNORECASE,
)
"""Between a subject and a name: "have a dog named", "adopted two cats from the shelter,"."""
_KIN_AT = re.compile(rf"^\s*(?:{_KIN_NOUN})\s+(?:at|from|in)\s+(?:the\s+)?$", re.IGNORECASE)
_IS = re.compile(r"^\s*(?:is|was)\s*$", re.IGNORECASE)
_KIN_AFTER_NAME = re.compile(rf"^\s*{_MODIFIER}(?P<k>{_KIN_NOUN})\b(?!['’]s\b)", re.IGNORECASE)
"""A relative's noun after a name, not itself a possessor: "is my daughter", not "is my
daughter's godmother" (the godmother is no daughter)."""
_COPULA = re.compile(
    r"(?:\b(?:is|was|be|being|been|am|are|were)|^\s*['’]s)"
    r"(?:\s+(?:also|now|still|actually|officially))?\s*$",
    re.IGNORECASE,
)
"""A copula, maybe with an adverb: "is", "'s", "is also", "is now"."""
_WITH_COPULA = re.compile(r"^(?:i['’]?m|we['’]re)$", re.IGNORECASE)
"""A first person said with its copula ("I'm Walburga's sister"): the words between hold
none."""
_ASIDE = re.compile(
    r"\s*,\s*(?:who|whom|whose|which|where)\b[^,]*,\s*|\s*\([^()]*\)\s*", re.IGNORECASE
)
"""A relative clause set off by commas, or any words in brackets, right after the first
end: an aside ("Ifeoma (my wife) is from"), whose names do not keep the ends apart and
whose words do not join them."""
_REGION = re.compile(r"^\s*,\s*$")
_POSSESSIVES = frozenset({"my", "our", "his", "her", "their"})
_GLUE_ONLY = re.compile(r"^\s*(?:(?:at|in|on|of|for|from|to|with|by|near|the|a|an)\s+)*$", re.I)
"""Words between two ends that are prepositions and articles only."""


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


def _speaker_spans(sentence: str, known: frozenset[str]) -> list[Span]:
    spans = [Span(m.start(), m.end()) for m in FIRST_PERSON.finditer(sentence)]
    if subject_dropped(sentence, known):  # "originally from Ballarat but I've…"
        spans.insert(0, Span(0, 0))
    return spans


def mentions(
    sentence: str,
    names: dict[str, str],
    speaker: str,
    people: dict[str, str],
    antecedent: str | None = None,
) -> dict[str, list[Span]]:
    """Where each end is said in `sentence`, by case-folded node: `names` maps a node to its
    entity type; `speaker` is the node of the one who said it (its first-person words);
    `people` maps the speakers' nodes to their names as written ("user" → "Ola"). Pronouns
    go to the nearest fitting name said before them ("she", "he": not one after an
    article, nor one whose relative is named: "Kai is Dana's kid, he…" is Kai); a clause
    that drops its subject (`clauses.dropped_subjects`) says the sentence's subject again
    where its words start. "he" or "she" with no one before it is `antecedent`, a person
    named in an earlier sentence (`antecedents`), when given."""
    found: dict[str, list[Span]] = {speaker: _speaker_spans(sentence, frozenset(names))}
    for name in names:
        if name not in people:
            found.setdefault(name, []).extend(_spans_of(name, sentence))
    for node, written in people.items():
        found.setdefault(node, []).extend(_spans_of(written, sentence))
    said = sorted((s.start, n) for n, spans in found.items() for s in spans if s.end > s.start)
    for pattern, kinds in ((_HE, PERSONS), (_IT, frozenset({"organisation"}))):
        for m in pattern.finditer(sentence):
            before = [
                n
                for at, n in said
                if at < m.start()
                and names.get(n, "person") in kinds
                and not (kinds is PERSONS and _ARTICLE_BEFORE.search(sentence[:at]))
                and not (kinds is PERSONS and _kin_possessor(sentence, at))
            ]
            if before and before[-1] != speaker:
                found[before[-1]].append(Span(m.start(), m.end(), pronoun=True))
            elif not before and kinds is PERSONS and antecedent is not None:
                found.setdefault(antecedent.casefold(), []).append(
                    Span(m.start(), m.end(), pronoun=True)
                )
    subject = _subject(sentence, said, found, speaker)
    if subject is not None:
        for at in dropped_subjects(sentence):
            found[subject].append(Span(at, at, pronoun=True))
    return found


def possessed_kin(said: str, after: str) -> bool:
    """Whether an end `said` as a possessor ("my", "Dana's") is followed by a relative's
    noun (`after`: " cousin Bertrand", " kid"): the phrase names the relative."""
    possessor = said.casefold() in _POSSESSIVES or said.endswith(("'s", "’s"))
    return possessor and _KIN_AFTER_NAME.match(after) is not None


def _names_relative(said: str, after: str) -> bool:
    """Whether a possessor said between two ends only introduces the second ("my cousin"
    in "…next door to my cousin Bertrand"): part of its name, it keeps nothing apart."""
    possessor = said.casefold() in _POSSESSIVES or said.endswith(("'s", "’s"))
    return possessor and _KIN_AFTER_MY.match(after) is not None


def _kin_possessor(sentence: str, at: int) -> bool:
    """Whether the name said at `at` possesses a relative ("Dana's kid", "Barnaby's mum"):
    "he" or "she" after it stands for the relative, not for it."""
    possessor = re.match(r"[\w-]+['’]s\b", sentence[at:])
    return (
        possessor is not None
        and _KIN_AFTER_NAME.match(sentence[at + possessor.end() :]) is not None
    )


def _subject(
    sentence: str, said: list[tuple[int, str]], found: dict[str, list[Span]], speaker: str
) -> str | None:
    """The node a sentence opens on as its subject: the speaker when it drops its subject
    or opens on "I"; the first name said, also after a possessor and a relative's noun
    ("my son Florian studied…"); None when it opens on an object ("my flat…")."""
    if any(s.start == s.end == 0 for s in found.get(speaker, [])):
        return speaker
    if not said:
        return None
    at, node = said[0]
    word = sentence[at:].split(maxsplit=1)[0].casefold().strip(",")
    if word not in _POSSESSIVES and word not in _OBJECT_FORMS and not word.endswith(("'s", "’s")):
        return node
    for later, other in said[1:]:
        possessor = re.match(r"[\w-]+['’]s\b", sentence[later:])  # "my friend Jo's mom"
        if _KIN_AFTER_MY.match(sentence[at + len(word) : later]) and not possessor:
            return other
        break
    return None


def pair_of(
    source: str,
    target: str,
    sentence: str,
    said: dict[str, list[Span]],
    names: dict[str, str],
) -> Pair | None:
    """The two ends where they are said closest and joined: not across a clause that says
    its own subject, nor with a person or an organisation said between them (unless it is
    the first end's co-subject: "Lavrans and I both work at"; `between` is then the words
    after it), nor with the second end a place after another place's comma. None when no
    place the two ends are said is joined."""
    ends = {source.casefold(), target.casefold()}
    options = []
    for a in said.get(source.casefold(), []):
        for b in said.get(target.casefold(), []):
            first, second = (a, b) if a.start <= b.start else (b, a)
            if second.pronoun or second.start < first.end:  # "he", "it" open a clause
                continue
            implicit = first.start == first.end
            options.append((implicit, second.start - first.end, first, second, a is first))
    # the ends as written first, then a clause's borrowed subject (`clauses`)
    for _, _, first, second, forward in sorted(options, key=lambda o: (o[0], o[1], o[2].start)):
        if _borrowed_between(
            first, second, said.get((source if forward else target).casefold(), [])
        ):
            continue  # "…in Akureyri before settling in Ålesund": the later clause joins them
        cut = _blocked(sentence, first, second, said, names, ends)
        if cut is None or opens_own_clause(sentence[cut : second.end]):
            continue
        if opens_on(sentence[cut : second.start], sentence[second.end :], sentence[: first.start]):
            continue
        if subject_in_later_clause(
            sentence[cut : second.start], sentence[second.start : second.end]
        ):
            continue
        if _after_region(sentence, first, second, said, names, ends):
            continue
        if (
            _GLUE_ONLY.match(sentence[cut : second.start])
            and sentence[second.start : second.end].casefold() in _POSSESSIVES
            and not _is_contracted(sentence, first, second)
        ):  # "Logseq for my own notes": "my" is the notes' possessor, not the verb's object
            continue
        return Pair(source, target, sentence, sentence[cut : second.start], forward, first, second)
    return None


def _is_contracted(sentence: str, first: Span, second: Span) -> bool:
    """Whether the first end is a name whose "'s" is "is" before the second, a possessive
    ("Bohdan's my coworker": no possessive follows a possessive)."""
    said = sentence[first.start : first.end]
    return said.endswith(("'s", "’s")) and not sentence[first.end : second.start].strip()


def _borrowed_between(first: Span, second: Span, spans: list[Span]) -> bool:
    """Whether the first end is said again, as a clause's borrowed subject, between the two
    ends: that clause's words, not the whole stretch, join its subject to the second."""
    return any(
        s.start == s.end and s.pronoun and first.end < s.start <= second.start for s in spans
    )


def _blocked(
    sentence: str,
    first: Span,
    second: Span,
    said: dict[str, list[Span]],
    names: dict[str, str],
    ends: set[str],
) -> int | None:
    """Where the words joining the ends start (after a co-subject or an aside), or None
    when a person or an organisation said between them keeps them apart."""
    cut = first.end
    aside = _ASIDE.match(sentence, first.end, second.start)
    if aside is not None:  # "Gideon, who I play five-a-side with, is a developer at…"
        cut = aside.end()
    for name, spans in said.items():
        if name in ends or names.get(name, "person") not in BLOCKERS:
            continue
        for s in spans:
            if not (cut <= s.start and s.end <= second.start) or s.start == s.end:
                continue  # a clause's borrowed subject is not said: it keeps nothing apart
            before, after = sentence[first.end : s.start], sentence[s.end : second.start]
            if co_subject(before, after):
                cut = max(cut, s.end)
                continue
            if _KIN_AT.match(before) and _IS.match(after):  # "my manager at Ferrovia is Jun"
                continue
            if _names_relative(sentence[s.start : s.end], after):  # "…to my cousin Bertrand"
                continue
            return None
    return cut


def _after_region(
    sentence: str,
    first: Span,
    second: Span,
    said: dict[str, list[Span]],
    names: dict[str, str],
    ends: set[str],
) -> bool:
    """ "Austin, Texas": the second end is the region of a place said before it."""
    return any(
        names.get(name) == "place"
        and name not in ends
        and any(
            first.end <= s.start and _REGION.match(sentence[s.end : second.start]) for s in spans
        )
        for name, spans in said.items()
    )


def kin_of(pair: Pair) -> str | None:
    """The relative's noun when the pair reads "<possessor> <noun> <name>" (the possessor:
    "my", "his", "Ola's"…; the relative is the second end), or "<name> is <possessor>
    <noun>" ("Bram turns out to be Lotte's neighbour", "Ottilie turns out to be my
    neighbour"; the relative is the first end), or "<subject> has a <noun> named <name>"
    ("we adopted two cats from the shelter, Pesto…"), else None. Which end is the relative:
    `kin_relative_first`."""
    text = pair.sentence
    opener = text[pair.first.start : pair.first.end].casefold()
    if opener.endswith(("'s", "’s")) or opener in _POSSESSIVES:
        m = _KIN_AFTER_MY.match(pair.between)
    else:
        m = _KIN_BETWEEN.match(pair.between) or _KIN_HAS.match(pair.between)
    if m is None:
        closer = text[pair.second.start : pair.second.end].casefold()
        after = _KIN_AFTER_NAME.match(text[pair.second.end :])
        possessor = closer.endswith(("'s", "’s")) or closer in _POSSESSIVES
        apposed = bool(_COPULA.search(pair.between)) or pair.between.strip() in (",", "(")
        apposed = apposed or (bool(_WITH_COPULA.match(opener)) and not pair.between.strip())
        apposed = apposed or _is_contracted(text, pair.first, pair.second)
        if not (apposed and possessor and after):  # "is my neighbour", "Biscuit, our beagle"
            return None
        m = after
    word = " ".join((m.group("k") or m.group("r")).casefold().split())
    return KIN.get(word, word)


def kin_relative_first(pair: Pair) -> bool:
    """Whether the relative `kin_of` names is the first end said ("<name> is X's <noun>")."""
    return not any(k.match(pair.between) for k in (_KIN_AFTER_MY, _KIN_BETWEEN, _KIN_HAS))


_WORK_ROLE = re.compile(
    r"(?:\b(?:my|our|his|her|their)|['’]s)\s+(?:manager|boss|colleague|co-?worker|supervisor)"
    r"\s+at\s+(?:the\s+)?$",
    re.IGNORECASE,
)


def works_by_role(pair: Pair) -> bool:
    """Whether the pair reads "<possessor> <work noun> at <first end> is <second end>"
    ("my manager at Ferrovia Labs is Jun": Jun works at Ferrovia Labs)."""
    head = pair.sentence[: pair.first.start]
    return _IS.match(pair.between) is not None and _WORK_ROLE.search(head) is not None


def sentence_of(text: str, evidence: str) -> str:
    """The sentence of `text` that `evidence` (a link's, maybe cut) starts."""
    head = evidence.rstrip("…")[:60]
    for sentence in sentences(text):
        if " ".join(sentence.split()).startswith(head):
            return " ".join(sentence.split())
    return evidence
