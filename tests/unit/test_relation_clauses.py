"""Clauses without a parser, lists and tense for the relation typer (issue 32): own and
dropped subjects, co-subjects, list items after a relation's end, and the tense a clause is
said in. Figures live in `benchmarks.relations`; these check behaviour."""

from __future__ import annotations

import pytest

from engine.ingest.extraction.clauses import (
    co_subject,
    dropped_subjects,
    listed_after,
    opens_on,
    opens_own_clause,
    subject_in_later_clause,
    tense,
)
from engine.ingest.extraction.lists import extend_lists
from engine.ingest.extraction.names import Name, names_in
from engine.ingest.extraction.pairs import (
    kin_of,
    kin_relative_first,
    mentions,
    pair_of,
    works_by_role,
)
from engine.ingest.extraction.types import ExtractedRelation

KINDS = {"user": "person", "shalini": "name", "valencia": "name", "ardent motion": "name"}
KINDS |= {"lavrans": "person", "lindqvist bakery": "organisation", "florian": "name"}
KINDS |= {"harwick institute": "organisation", "calgary": "place", "corvel health": "name"}
KINDS |= {"brindle labs": "organisation", "ottilie": "name", "frome": "name", "exeter": "name"}
KINDS |= {"biscuit": "name", "olivia": "name", "harwick college": "organisation"}
KINDS |= {"jo": "person", "denise": "person", "tucson": "place", "brightwater": "organisation"}


def _pair(sentence: str, source: str, target: str):  # type: ignore[no-untyped-def]
    said = mentions(sentence, KINDS, "user", {})
    return pair_of(source, target, sentence, said, KINDS)


def test_a_clause_with_its_own_subject_is_told_from_one_that_drops_it() -> None:
    assert opens_own_clause(" robotics summit last week, she's a researcher at")
    assert opens_own_clause(" but I've")
    assert not opens_own_clause(", which is based in")
    sentence = "left Brindle Labs in may, now at Corvel Health doing backend stuff"
    assert [sentence[at:].split()[0] for at in dropped_subjects(sentence)] == ["at"]
    assert dropped_subjects("I met Shalini at the summit, she's great") == []


def test_ends_across_a_clause_with_its_own_subject_are_not_joined() -> None:
    sentence = "I met Shalini at the Valencia robotics summit, she's a researcher at Ardent Motion"
    assert _pair(sentence, "Valencia", "Ardent Motion") is None
    shalini = _pair(sentence, "Shalini", "Ardent Motion")
    assert shalini is not None  # "she" is Shalini, not "the Valencia" (after an article)
    assert shalini.between.strip() == "'s a researcher at"


def test_a_clause_that_drops_its_subject_borrows_the_sentences() -> None:
    corvel = _pair("left Brindle Labs in may, now at Corvel Health", "user", "Corvel Health")
    assert corvel is not None
    assert corvel.between.strip() == "at"
    sentence = "my son Florian studied at Harwick Institute before moving to Calgary"
    calgary = _pair(sentence, "Florian", "Calgary")
    assert calgary is not None
    assert calgary.between.strip() == "moving to"


def test_a_co_subject_does_not_keep_the_ends_apart() -> None:
    assert co_subject(" and ", " both work at")
    assert co_subject(" and his wife ", " live in")
    assert not co_subject(", and ", " been going")  # ", and we've been…" opens a clause
    assert not co_subject(" and ", "'ve been")
    sentence = "my husband Lavrans and I both work at Lindqvist Bakery"
    pair = _pair(sentence, "Lavrans", "Lindqvist Bakery")
    assert pair is not None
    assert pair.between.strip() == "both work at"
    clause = "Frome, and we've been thinking of leaving Exeter"
    assert _pair(clause, "Frome", "Exeter") is None


def test_kin_after_a_copula_and_my() -> None:
    pair = _pair("Ottilie turns out to be my neighbour", "Ottilie", "user")
    assert pair is not None
    assert kin_of(pair) == "neighbour"
    assert kin_relative_first(pair)
    for sentence in ("Ottilie is also my direct manager", "Ottilie is now my line manager"):
        pair = _pair(sentence, "Ottilie", "user")  # an adverb, a modifier
        assert pair is not None
        assert kin_of(pair) == "manager"


def test_list_items_after_a_relations_end() -> None:
    assert listed_after(", then ", "")
    assert listed_after(" for two years after uni and then ", " briefly")
    assert not listed_after(", ", "")  # "Austin, Texas": a region
    assert not listed_after(", and now im in ", "")
    assert not listed_after(" and ", " is great")
    sentence = "i used to live in Brighton, then Bristol, and now im in Cardiff"
    relations = [
        ExtractedRelation("user", "LIVED_IN", "Brighton", sentence),
        ExtractedRelation("user", "MENTIONS", "Bristol", sentence),
        ExtractedRelation("user", "MENTIONS", "Cardiff", sentence),
    ]
    kinds = {"brighton": "place", "bristol": "place", "cardiff": "place"}
    out = extend_lists(relations, kinds)
    assert out[1] == ExtractedRelation("user", "LIVED_IN", "Bristol", sentence)
    assert out[2] == relations[2]
    people = extend_lists(relations, {"brighton": "place", "bristol": "person"})
    assert people[1] == relations[1]  # not of the end's entity type


@pytest.mark.parametrize(
    ("words", "said"),
    [
        ("is studying law at", "present"),
        ("'ve been living in", "present"),
        ("where we've lived for six years", "present"),
        ("used to live in", "past"),
        ("back when I lived in", "past"),
        ("studied engineering at", "past"),
        ("before moving to", None),
        ("lived in", "past"),  # a lasting state in the simple past is over
        ("worked at Halvard for years", "past"),
        ("moved to", None),  # a change in the past is not: its result holds
    ],
)
def test_the_tense_a_clause_is_said_in(words: str, said: str | None) -> None:
    assert tense(words) == said


@pytest.mark.parametrize(
    ("before", "said"),
    [
        ("moved from Toruń to", "present"),  # a destination: where the subject is now
        ("lived in Nairobi for years before coming back home to", "present"),
        ("lived in Nairobi for years before coming back home", "past"),
        ("used to", "past"),  # "used to" is no destination
    ],
)
def test_a_destination_is_where_the_subject_is_now(before: str, said: str | None) -> None:
    assert tense(before, before) == said


def test_a_name_that_opens_its_own_clause_is_not_the_object_before_it() -> None:
    assert opens_on(" manager now that ", " left")
    assert opens_on(" manager, and ", " works there")
    assert not opens_on(" manager now that ", "")  # no verb: not a subject
    assert not opens_on(" manages ", " left")  # no opener before
    assert _pair("Shalini is my manager now that Ottilie left", "user", "Ottilie") is None
    assert _pair("Shalini is my manager now", "user", "Shalini") is not None


def test_kin_by_apposition_and_a_role_at_a_place() -> None:
    pair = _pair("took Biscuit, our beagle, to the vet", "Biscuit", "user")
    assert pair is not None
    assert kin_of(pair) == "beagle"
    assert kin_relative_first(pair)
    kinds = KINDS | {"jun": "name", "ferrovia labs": "organisation"}
    sentence = "my manager at Ferrovia Labs is Jun, he's great"
    said = mentions(sentence, kinds, "user", {})
    jun = pair_of("user", "Jun", sentence, said, kinds)
    assert jun is not None  # Ferrovia Labs, where the manager is, does not keep them apart
    assert kin_of(jun) == "manager"
    assert not kin_relative_first(jun)
    at = pair_of("Ferrovia Labs", "Jun", sentence, said, kinds)
    assert at is not None
    assert works_by_role(at)
    assert not works_by_role(_pair("I met Shalini at Ardent Motion", "Ardent Motion", "Shalini"))


def test_names_through_a_possessive_an_apposition_and_a_relative_clause() -> None:
    said = names_in("My sister Wren is a nurse at St Aldric's Hospital")
    assert Name("St Aldric's Hospital", "organisation") in said
    assert [n.name for n in names_in("Initech's head office sits in Austin")] == [
        "Initech",
        "Austin",
    ]
    assert names_in("Gideon, who I play with, is a developer")[0].name == "Gideon"
    assert names_in("Honestly, a good day") == []
    assert [n.name for n in names_in("took biscuit, our beagle, to the vet", lower=True)] == [
        "Biscuit"
    ]
    assert "It" not in [n.name for n in names_in("took it, our dog Rex", lower=True)]


@pytest.mark.parametrize(
    ("sentence", "ends", "noun", "relative_first"),
    [
        ("we have a dog named Rex", ("user", "Rex"), "dog", False),
        ("I have a younger sister called Ana", ("user", "Ana"), "sister", False),
        (
            "we adopted two cats from the shelter, Pesto and Gnocchi",
            ("user", "Pesto"),
            "cat",
            False,
        ),
        ("my older sister Wren is a nurse", ("user", "Wren"), "sister", False),
        ("ugh, Koffi (my manager) moved our standup", ("Koffi", "user"), "manager", True),
        ("I met a dog, Rex", ("user", "Rex"), None, True),
    ],
)
def test_kin_with_a_modifier_a_name_given_or_a_relative_one_has(
    sentence: str, ends: tuple[str, str], noun: str | None, relative_first: bool
) -> None:
    kinds = KINDS | {"rex": "name", "ana": "name", "pesto": "name", "wren": "name"}
    said = mentions(sentence, kinds | {"koffi": "name"}, "user", {})
    pair = pair_of(*ends, sentence, said, kinds | {"koffi": "name"})
    assert pair is not None
    assert kin_of(pair) == noun
    if noun:
        assert kin_relative_first(pair) is relative_first


def test_a_relative_clause_aside_neither_joins_nor_keeps_apart() -> None:
    kinds = KINDS | {"gideon": "name", "tallow games": "organisation"}
    sentence = "Gideon, who I play five-a-side with, is a developer at Tallow Games"
    pair = pair_of("Gideon", "Tallow Games", sentence, mentions(sentence, kinds, "user", {}), kinds)
    assert pair is not None
    assert pair.between.strip() == "is a developer at"
    plain = "Marcus works at Tidewater Labs, which is based in Boston"
    kinds |= {"marcus": "name", "tidewater labs": "organisation", "boston": "place"}
    said = mentions(plain, kinds, "user", {})
    assert pair_of("Marcus", "Boston", plain, said, kinds) is None
    based = pair_of("Tidewater Labs", "Boston", plain, said, kinds)
    assert based is not None
    assert based.between.strip(" ,") == "which is based in"


def test_a_finite_verb_and_its_preposition_after_and_borrow_the_subject() -> None:
    sentence = "Olivia studied at Harwick College and now lives in Exeter"
    assert [sentence[at:].split()[0] for at in dropped_subjects(sentence)] == ["lives"]
    olivia = _pair(sentence, "Olivia", "Exeter")  # a sentence with no "I" is not the user's
    assert olivia is not None
    assert olivia.between.strip() == "lives in"  # from where the clause borrows Olivia
    assert _pair(sentence, "user", "Exeter") is None


def test_a_borrowed_subject_keeps_nothing_apart_and_a_possessor_is_no_subject() -> None:
    sentence = "my friend Jo's mom, Denise, used to live in Tucson"
    denise = _pair(sentence, "Denise", "Tucson")
    assert denise is not None
    assert denise.between.strip(" ,") == "used to live in"
    jo = _pair(sentence, "Jo", "Tucson")
    assert jo is None or jo.between.strip(" ,") != "used to live in"


def test_a_subject_pronoun_after_a_clause_opener_starts_a_later_clause() -> None:
    assert subject_in_later_clause(" Health, first week went ok ", "i")
    assert not subject_in_later_clause(" works with ", "me")  # an object, not a subject
    assert not subject_in_later_clause(" works with ", "I")  # no clause between
    sentence = "just started a new job at Brightwater, first week went ok i think"
    pair = _pair(sentence, "user", "Brightwater")
    assert pair is not None
    assert pair.between.strip() == "just started a new job at"
