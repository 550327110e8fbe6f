"""The relation typer (issue 32): candidate pairs, guards, kin by noun, and typing by the
joining words with MiniLM. Figures live in `benchmarks.relations`; these check behaviour."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.ingest.extraction.pairs import kin_of, kin_relative_first, mentions, pair_of
from engine.ingest.extraction.relation_typer import RelationTyper
from engine.ports import InputType, Vector
from tests.support.relations import typed

TYPES = {"tom": "name", "halvorsen marine": "organisation", "teodor": "person"}
TYPES |= {"riga": "place", "vilnius": "place", "mila": "name", "austin": "place"}
TYPES |= {"texas": "place", "initech": "organisation"}


def _pair(sentence: str, source: str, target: str):  # type: ignore[no-untyped-def]
    said = mentions(sentence, TYPES | {"user": "person"}, "user", {})
    return pair_of(source, target, sentence, said, TYPES | {"user": "person"})


def test_a_relation_joins_neighbours_not_ends_with_a_person_between() -> None:
    sentence = "my brother Tom works at Halvorsen Marine, he fixes boat engines"
    tom = _pair(sentence, "Tom", "Halvorsen Marine")
    assert tom is not None
    assert tom.between.strip() == "works at"
    assert tom.forward
    assert _pair(sentence, "user", "Halvorsen Marine") is None


def test_a_pronoun_stands_for_the_person_said_before_it() -> None:
    sentence = "Teodor used to live in Vilnius but he lives in Riga now"
    riga = _pair(sentence, "Teodor", "Riga")
    assert riga is not None
    assert riga.between.strip() == "lives in"


def test_a_region_after_a_place_comma_is_not_a_second_end() -> None:
    sentence = "Initech's head office sits in Austin, Texas"
    assert _pair(sentence, "Initech", "Austin") is not None
    assert _pair(sentence, "Initech", "Texas") is None


def test_kin_is_read_from_the_noun_between_possessor_and_name() -> None:
    pair = _pair("he lives in Riga now with his daughter Mila", "Teodor", "Mila")
    assert pair is None  # "he" refers to no one said before it
    pair = _pair("Teodor lives in Riga now with his daughter Mila", "Teodor", "Mila")
    assert pair is not None
    assert kin_of(pair) == "daughter"
    assert not kin_relative_first(pair)


class OtherSpace:
    """An embedder of another vector space: the typer must leave the links alone."""

    model = "hashing-v1"
    dimension = 4

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        raise AssertionError("an inactive typer embeds nothing")


async def test_another_vector_space_types_nothing() -> None:
    text = "These days I'm employed by Initech as an analyst."
    assert await typed(RelationTyper(OtherSpace()), text) == await typed(None, text)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("These days I'm employed by Initech as an analyst.", {("user", "WORKS_AT", "Initech")}),
        ("Initech's head office sits in Austin, Texas.", {("Initech", "BASED_IN", "Austin")}),
        (
            "My cousin Ravi teaches at Brookfield Academy.",
            {("Ravi", "COUSIN_OF", "user"), ("Ravi", "WORKS_AT", "Brookfield Academy")},
        ),
        ("i report to a guy called Stefan", {("Stefan", "MANAGER_OF", "user")}),
    ],
)
async def test_unseen_phrasings_are_typed(
    typer: RelationTyper, text: str, expected: set[tuple[str, str, str]]
) -> None:
    assert await typed(typer, text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I'm not employed by Initech anymore.",
        "If I ever move to Lisbon I'll learn Portuguese.",
        "Mum said Carla lives in Leeds now.",
        "I met Sarah at Blue Bottle yesterday.",
        "Is Initech based in Austin?",
        "I basically live in Excel, the whole office runs on it.",  # a figure of speech
        "A coworker swears our Mireille is moving to Singapore.",  # reported
    ],
)
async def test_negated_modal_reported_and_bare_preposition_stay_untyped(
    typer: RelationTyper, text: str
) -> None:
    assert await typed(typer, text) == set()


async def test_one_embedding_call_per_turn(minilm: LocalMiniLMEmbedder) -> None:
    calls: list[int] = []
    inner = minilm

    class Counting:
        model = inner.model
        dimension = inner.dimension

        async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
            calls.append(len(texts))
            return await inner.embed(texts, input_type)

    counting = RelationTyper(Counting())
    text = "Marcus has been employed by Globex for years and his sister Ana is living in Porto."
    await typed(counting, text)
    await typed(counting, text)
    assert calls[0] > 2  # the prototypes, once
    assert calls[1:] == [calls[1]] * 2  # then one call per turn
    assert calls[1] >= 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # one studies at a school: a researcher at a company works there
        (
            "I met Shalini at a conference, she's a researcher at Ardent Motion",
            {("Shalini", "WORKS_AT", "Ardent Motion")},
        ),
        # a name after an article is no person to manage
        ("Hyun-woo, a colleague of mine, is running the Seoul marathon", set()),
        # nor one after "at": "my team lead at Kortlink" manages no Kortlink
        ("Bastiaan is my team lead at Kortlink", set()),
        # one at a school is a student there unless the words say work
        (
            "I'm doing my masters at the University of Tartu, second semester now",
            {("user", "STUDIES_AT", "University of Tartu")},
        ),
        ("Our son Elias just started at Westbrook Primary", {("Elias", "SON_OF", "user")}),
        # the clause's verb before a pronoun end says its tense ("did her masters")
        (
            "our daughter Annika did her masters at Vellmar University",
            {("Annika", "STUDIED_AT", "Vellmar University")},
        ),
        # words that say a type the ends do not fit type nothing (no WORKS_AT instead)
        ("her assistant Carla studies at Sierra State part-time", set()),
        # "in Sacramento, my aunt…": a place is not the relative
        ("Redwood Dental is based in Sacramento, my aunt runs the place", set()),
        # the clause's tense picks between twins
        (
            "My daughter Amara is studying law at Kingsford University",
            {("Amara", "DAUGHTER_OF", "user"), ("Amara", "STUDIES_AT", "Kingsford University")},
        ),
    ],
)
async def test_entity_kinds_and_tense_constrain_the_type(
    typer: RelationTyper, text: str, expected: set[tuple[str, str, str]]
) -> None:
    got = await typed(typer, text)
    assert expected <= got
    if not expected:
        assert not any(t in ("MANAGER_OF", "WORKS_AT") or t.startswith("AUNT") for _, t, _ in got)
    assert not any(t == "WORKS_AT" and "Primary" in o for _, t, o in got)
