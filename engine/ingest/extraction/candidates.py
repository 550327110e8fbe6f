"""The pairs the relation typer types (issue 32), and the kin it reads by noun: for each
untyped link of a turn, where its two ends are said (`pairs`), whether the piece joining
them states a fact (not negated, figurative, conditional, modal or reported), the ends'
entity types, the words to embed and the clause's tense (`clauses.tense`).

Entity types come from the name finder's cues, and from the turn's relatives: a name in a
relative's relation ("Wilhelmina is Barnaby's mum") is a person, so "she works at the
library on Castle Street" does not make it an organisation based somewhere.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.ingest.extraction.antecedents import antecedents
from engine.ingest.extraction.clauses import tense
from engine.ingest.extraction.names import evidence_of, sentences, statement
from engine.ingest.extraction.pairs import (
    PERSONS,
    Pair,
    Span,
    kin_of,
    kin_relative_first,
    mentions,
    pair_of,
    possessed_kin,
    works_by_role,
)
from engine.ingest.extraction.rules.lexicon import relation_stem
from engine.ingest.extraction.rules.reading import states_fact
from engine.ingest.extraction.rules.registry import USER
from engine.ingest.extraction.rules.speaker import speaker_of
from engine.ingest.extraction.types import (
    UNTYPED,
    ExtractedRelation,
    Extraction,
    TurnText,
)

ORG = frozenset({"organisation", "name", "school", "thing"})
"""Entity types an organisation's end may have ("name": not typed yet)."""
_ARTICLE = re.compile(r"\b(?:the|a|an)\s+$", re.IGNORECASE)
_AT = re.compile(r"\bat\s+$", re.IGNORECASE)
"""A name right after "at" is where one is, not a person ("my team lead at Kortlink")."""
_SCHOOL_WORDS = frozenset(
    {"university", "uni", "college", "school", "academy", "institute", "polytechnic"}
    | {"conservatory", "conservatoire", "seminary", "primary", "high", "kindergarten"}
    | {"secondary", "gymnasium", "lyceum", "lycée", "universidad", "universidade"}
    | {"université", "università", "universität", "universiteit", "uniwersytet"}
)
"""Words of a school's name: one studies at a school ("Kingsford University"), not at
"Ardent Motion"."""
_GLUE = frozenset(
    {"at", "in", "on", "of", "for", "from", "to", "with", "by", "near", "the", "a", "an"}
)
_CONJOINED = re.compile(r"^\s*(?:and|&)\s*$", re.IGNORECASE)
"""Two ends joined by "and" alone: co-subjects, whose shared predicate is what joins them
("Rasmus and Halima work together at…", "Leopold and Imke have been friends")."""
_BEFORE_NAME = re.compile(r"\s(?:(?:at|in|for|with|from|to|on)\s+)?(?=[A-Z])")
"""Where a predicate reaches a name (its object): the words before are what it says."""
_CLAUSE_END = re.compile(r"[,;:.!?]|\s(?:and|but|so|because|before|after|then)\s")
_NEGATED = re.compile(r"\b(?:not|never|no\s+longer|n't|nt)\b|n't\b", re.IGNORECASE)
_FIGURATIVE = re.compile(
    r"\b(?:basically|practically|virtually|literally|pretty\s+much|might\s+as\s+well)\b",
    re.IGNORECASE,
)
"""Words that make a verb a figure of speech ("I basically live in Excel", "I practically
work at the Starbucks"): what follows is not the fact it says."""
_NEARLY = re.compile(r"\b(?:nearly|almost)\s+(?:\w+ed|went|took|got|left|quit)\b", re.I)
"""A past verb said to have nearly happened ("I nearly enrolled at", "she almost took the
job at"): it did not."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A pair to type: its ends' nodes as the link names them, their entity types, and
    the text to embed."""

    pair: Pair
    types: tuple[str, str]
    text: str
    tense: str | None = None
    """"past" or "present" when the clause says which (`clauses.tense`)."""
    speaker: str = ""
    """The node of who said it ("user", or a named speaker's)."""
    crossed: frozenset[str] = frozenset()
    """The kinds of the other names said between the ends (`_crossed`)."""


def candidates(
    messages: Sequence[TurnText], found: Extraction
) -> tuple[dict[int, ExtractedRelation], list[tuple[int, Candidate]]]:
    """The kin relations read by noun, and the pairs to embed, each by the index in
    `found.relations` of the untyped link it would type."""
    types, people = _turn_types(messages, found)
    referred = antecedents(messages, frozenset(types))
    by_evidence: dict[str, list[int]] = {}
    for i, r in enumerate(found.relations):
        if r.type in UNTYPED and r.evidence:
            by_evidence.setdefault(r.evidence, []).append(i)
    kin: dict[int, ExtractedRelation] = {}
    joined: list[tuple[int, Pair, tuple[str, str], str]] = []
    for message in messages:
        who = speaker_of(message)
        if who is None:
            continue
        node = USER if who.is_user else (who.name or USER).casefold()
        for sentence in filter(None, map(statement, sentences(message.content))):
            sentence = " ".join(sentence.split())
            said = mentions(sentence, types, node, people, referred.get(evidence_of(sentence)))
            for i in by_evidence.pop(evidence_of(sentence), []):
                r = found.relations[i]
                pair = pair_of(r.source, r.target, sentence, said, types)
                if pair is None or not _stated(pair):
                    continue
                ends = (r.source, r.target) if pair.forward else (r.target, r.source)
                relation = _by_noun(pair, ends, types)
                if relation is not None:
                    kin[i] = relation
                    _relatives_are_people(types, relation)
                elif _joined_by_verb(pair, node, ends[0]) and not _possessed_relative(pair):
                    joined.append((i, pair, ends, node))
    return kin, [(i, _candidate(pair, ends, types, node)) for i, pair, ends, node in joined]


def _possessed_relative(pair: Pair) -> bool:
    """Whether the second end is a possessor of a relative ("…lives next door to my cousin
    Bertrand"): the verb's object is the relative, not the possessor."""
    text = pair.sentence
    return possessed_kin(text[pair.second.start : pair.second.end], text[pair.second.end :])


def _turn_types(
    messages: Sequence[TurnText], found: Extraction
) -> tuple[dict[str, str], dict[str, str]]:
    """The entity type of each node of the turn, and the speakers' nodes → names as
    written: the name finder's types, the speakers as people, and a name in a relative's
    relation as a person (or a pet)."""
    types = {e.name.casefold(): e.type for e in found.entities}
    people: dict[str, str] = {}
    for m in messages:
        who = speaker_of(m)
        if who is not None and who.name:
            people[USER if who.is_user else who.name.casefold()] = who.name
    for node in (USER, *people):
        types[node] = "person"
    for r in found.relations:
        if r.type not in UNTYPED:
            _relatives_are_people(types, r)
    return types, people


def _by_noun(pair: Pair, ends: tuple[str, str], types: dict[str, str]) -> ExtractedRelation | None:
    """The relation a noun names: a relative ("my son Lachlan"), or a work role at a place
    ("my manager at Ferrovia Labs is Jun": Jun `WORKS_AT` Ferrovia Labs)."""
    sentence = pair.sentence
    kinds = (
        _kind(types, ends[0], pair.first, sentence),
        _kind(types, ends[1], pair.second, sentence),
    )
    relation = _kin_relation(pair, ends, kinds)
    if relation is None and kinds[0] in ORG and works_by_role(pair):
        relation = ExtractedRelation(ends[1], "WORKS_AT", ends[0], evidence_of(sentence))
    return relation


def _candidate(pair: Pair, ends: tuple[str, str], types: dict[str, str], speaker: str) -> Candidate:
    """The pair to embed, its ends' kinds read after every relative of the turn is known."""
    sentence = pair.sentence
    kinds = (
        _kind(types, ends[0], pair.first, sentence),
        _kind(types, ends[1], pair.second, sentence),
    )
    said_in = (
        _CLAUSE_END.split(sentence[: pair.first.start])[-1]
        + pair.between
        + _CLAUSE_END.split(sentence[pair.second.end :])[0]
    )
    text = _text(pair)
    if _CONJOINED.match(pair.between):  # "Leopold and Imke have been friends since…"
        predicate = _BEFORE_NAME.split(_CLAUSE_END.split(sentence[pair.second.end :])[0])[0]
        words = re.findall(r"[\w'’]+", predicate)
        if words and words[0].casefold() not in _GLUE:  # a verb, not "…and Mireille at the"
            text = predicate.strip()
    crossed = _crossed(pair, ends, types)
    return Candidate(pair, kinds, text, tense(said_in, pair.between), speaker, crossed)


_DEFINITE = frozenset({"person", "place", "organisation", "school", "tool", "book", "pet"})
_TURN = r"\s*,?\s+(?:but|which|where|who|whose)\b"
"""After a name, a contrast or a relative clause: what follows is said of that name, or
against it ("…in Whanganui but been in", "…in Brno, which is where"), not of the first
end with the same words."""


def _crossed(pair: Pair, ends: tuple[str, str], types: dict[str, str]) -> frozenset[str]:
    """The kinds (a name finder's cue, not an untyped name) of the other names of the turn
    said between the two ends before a contrast or a relative clause (`_TURN`: "born in
    Whanganui but been in Adelaide": a place). A move's "from Toruń to Gdańsk" crosses
    nothing: its origin is no nearer end of another clause."""
    between = pair.between.casefold()
    skip = {e.casefold() for e in ends}
    return frozenset(
        kind
        for node, kind in types.items()
        if kind in _DEFINITE
        and node not in skip
        and node in between  # cheap before the pattern
        and re.search(rf"(?<!\w){re.escape(node)}(?:['’]s)?{_TURN}", between)
    )


def _relatives_are_people(types: dict[str, str], relation: ExtractedRelation) -> None:
    """The ends of a relative's relation (`…_OF`) are people, or a pet, when the name
    finder left them untyped names ("Wilhelmina is Barnaby's mum": both are people)."""
    if relation.type.endswith("_OF"):
        _person(types, relation.source, "pet" if relation.type == "PET_OF" else "person")
        _person(types, relation.target, "person")


def _person(types: dict[str, str], node: str, kind: str) -> None:
    if types.get(node.casefold(), "name") == "name":
        types[node.casefold()] = kind


def _kind(types: dict[str, str], node: str, span: Span, sentence: str) -> str:
    """The entity type of `node` said at `span`: "school" for an organisation or a name
    with a school's word ("Delft University of Technology", "Hollins Park Primary"); "thing"
    for an untyped name after an article ("the Seoul marathon": not a person); an
    organisation for one after "at" ("at Kortlink")."""
    kind = types.get(node.casefold(), "name")
    if kind in ("organisation", "name") and _SCHOOL_WORDS & set(node.casefold().split()):
        return "school"
    if kind == "name" and _ARTICLE.search(sentence[: span.start]):
        return "thing"
    if kind == "name" and _AT.search(sentence[: span.start]):
        return "organisation"
    return kind


def _stated(pair: Pair) -> bool:
    """Whether the piece joining the ends states a fact: not negated, not a figure of
    speech, not what nearly happened, not conditional, modal or reported."""
    text = pair.sentence
    left = text.rfind(",", 0, pair.first.start) + 1
    piece = text[left : pair.second.end]
    if _NEGATED.search(piece) or _FIGURATIVE.search(piece) or _NEARLY.search(piece):
        return False
    return states_fact(piece, pair.first.start - left)


_BY_BIRTH = frozenset(
    {"MOTHER", "FATHER", "SISTER", "BROTHER", "SON", "DAUGHTER", "CHILD", "COUSIN"}
    | {"AUNT", "UNCLE", "NIECE", "NEPHEW", "GRANDMOTHER", "GRANDFATHER", "TWIN"}
)
"""Relatives one stays: said in the past ("was my sister"), still the relation."""
_WAS = re.compile(r"\b(?:used\s+to\s+be|was|were|had\s+been)\b", re.IGNORECASE)
"""A copula in the past between a name and a role ("who used to be my manager")."""


def _kin_relation(
    pair: Pair, ends: tuple[str, str], kinds: tuple[str, str]
) -> ExtractedRelation | None:
    noun = kin_of(pair)
    if noun is None or kinds[1] not in PERSONS or kinds[0] not in PERSONS:
        return None
    kind = relation_stem(noun)
    first = kin_relative_first(pair)
    if first and kind not in _BY_BIRTH and _WAS.search(pair.between):
        return None  # "Benedikta, who used to be my manager": a role held once, not now
    relative, other = ends if first else ends[::-1]
    return ExtractedRelation(relative, f"{kind}_OF", other, evidence_of(pair.sentence))


def _joined_by_verb(pair: Pair, speaker: str, first: str) -> bool:
    """Whether a verb or noun may join the ends: not only prepositions and articles, unless
        the first end is the speaker (whose "I'm" holds the verb: "im in cardiff") or is said
    with a contracted "is" ("Chiamaka's from Owerri"). "met Sarah
        at Blue Bottle" says nothing of where Sarah works."""
    if first.casefold() == speaker or _says_is(pair):
        return True
    return any(w.casefold() not in _GLUE for w in re.findall(r"[\w'’]+", pair.between))


_IS_CONTRACTED = re.compile(
    r"^\s+(?:in|from|at|on|with|now|still|also|back|a|an|the|been|\w+ing)\b", re.I
)
"""After a name's "'s", a preposition, an adverb, an article or a participle: the "'s" is
"is" ("Chiamaka's from Owerri", "Esmé's in Montreal now"), not a possessive ("Nadia's
brother")."""


def _says_is(pair: Pair) -> bool:
    """Whether the first end is said with a contracted "is" (`_IS_CONTRACTED`)."""
    opener = pair.sentence[pair.first.start : pair.first.end]
    return opener.endswith(("'s", "’s")) and _IS_CONTRACTED.match(pair.between) is not None


def _text(pair: Pair) -> str:
    """The words that join the two ends, as embedded ("and" when nothing does), after the
    "is" a first end's "'s" may be (`_says_is`), from the last colon or semicolon ("on a
    sci-fi kick: read": what comes before it is another statement)."""
    between = re.sub(r"^['’]s\b", "", pair.between).strip(" ,()")
    between = re.split(r"[:;]\s", between)[-1]  # "on a sci-fi kick: read" → "read"
    if _says_is(pair):
        between = f"is {between}"
    return between or "and"
