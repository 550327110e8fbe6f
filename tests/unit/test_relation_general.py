"""General mechanisms of the relation typer found on the spent holdout split (issue 32):
each checks a structure with words of its own, not a fixture's case."""

from __future__ import annotations

import pytest

from engine.ingest.extraction.antecedents import antecedents
from engine.ingest.extraction.clauses import opens_on, tense
from engine.ingest.extraction.names import names_in
from engine.ingest.extraction.pairs import kin_of, kin_relative_first, mentions, pair_of
from engine.ingest.extraction.relation_typer import RelationTyper, link_turn
from engine.ingest.extraction.rules import RuleBasedExtractor
from engine.ingest.extraction.types import UNTYPED, ExtractedRelation, ExtractionPolicy, TurnText
from engine.ingest.extraction.workplaces import share_workplaces
from tests.support.relations import Triple, typed


def test_the_speaker_with_a_copula_is_the_relative_of_a_possessor() -> None:
    names = {"user": "person", "henrietta": "name"}
    for sentence in ("I'm Henrietta's older brother, sadly", "I am Henrietta's brother"):
        said = mentions(sentence, names, "user", {})
        pair = pair_of("user", "Henrietta", sentence, said, names)
        assert pair is not None
        assert kin_of(pair) == "brother"
        assert kin_relative_first(pair)  # the speaker is the brother
    said = mentions("I met Henrietta's brother", names, "user", {})
    pair = pair_of("user", "Henrietta", "I met Henrietta's brother", said, names)
    assert pair is None or kin_of(pair) is None  # no copula: not the speaker's kin


@pytest.mark.parametrize(
    ("words", "said"),
    [
        ("my nephew started at", "present"),
        ("she enrolled in", "present"),
        ("she started at the place in 2009 and graduated", None),  # both said
    ],
)
def test_a_joining_said_in_the_past_holds_now(words: str, said: str | None) -> None:
    assert tense(words) == said


def test_he_after_a_possessor_of_a_relative_is_the_relative() -> None:
    names = {"user": "person", "oskar": "name", "ingrid": "name", "tallis school": "school"}
    sentence = "Oskar is Ingrid's nephew, he goes to Tallis School"
    said = mentions(sentence, names, "user", {})
    assert any(s.pronoun for s in said["oskar"])
    assert not any(s.pronoun for s in said["ingrid"])
    # without a relative's noun, the possessor is still who "she" may be
    said = mentions("Ingrid's car broke down, she walked", names, "user", {})
    assert any(s.pronoun for s in said["ingrid"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Radomir's from Plovdiv, he moved here for work", {("Radomir", "FROM", "Plovdiv")}),
        ("our niece Ottavia's in Lyon now, teaching", {("Ottavia", "LIVES_IN", "Lyon")}),
    ],
)
async def test_a_contracted_is_after_a_name_joins_it_to_a_place(
    typer: RelationTyper, text: str, expected: set[Triple]
) -> None:
    assert expected <= await typed(typer, text)


async def test_a_name_in_a_relatives_relation_is_a_person_not_an_organisation(
    typer: RelationTyper,
) -> None:
    text = "Gwendolyn is Osric's aunt, she works at the library on Harbour Street"
    got = await typed(typer, text)
    assert ("Gwendolyn", "AUNT_OF", "Osric") in got
    assert not any(t == "BASED_IN" for _, t, _ in got)  # a person is based nowhere


@pytest.mark.parametrize(
    "text",
    [
        "we were supposed to move to Lisbon but it fell through",
        "I'm planning to join Orbis Freight after the summer",
    ],
)
async def test_a_plan_not_carried_out_states_nothing(typer: RelationTyper, text: str) -> None:
    assert await typed(typer, text) == set()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a peer of the speaker is the source, as a relative is
        ("I share an apartment with Benedikta, she cooks", {("Benedikta", "ROOMMATE_OF", "user")}),
        ("my closest mate Gudrun is visiting", {("Gudrun", "BEST_FRIEND_OF", "user")}),
        # "my aunt" only introduces Hedda: it neither keeps the ends apart nor is the object
        (
            "Wojciech lives next door to my aunt Hedda",
            {("Wojciech", "NEIGHBOUR_OF", "Hedda"), ("Hedda", "AUNT_OF", "user")},
        ),
        # co-subjects joined by their shared predicate
        (
            "Ignatius and Perpetua are close friends from school",
            {("Ignatius", "FRIEND_OF", "Perpetua")},
        ),
    ],
)
async def test_peers_by_verb_by_noun_and_by_a_shared_predicate(
    typer: RelationTyper, text: str, expected: set[Triple]
) -> None:
    assert await typed(typer, text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "ran into Thaddeus and Mireille at the fair, they were both signing copies",  # objects
        "loving it, Kensal Rise is way better than where i was before",  # loose words
    ],
)
async def test_no_peers_from_objects_or_loose_words(typer: RelationTyper, text: str) -> None:
    assert await typed(typer, text) == set()


def test_names_joined_by_and_at_a_clause_start_are_co_subjects() -> None:
    assert not opens_on(" and ", " are close friends", "")
    assert not opens_on(" and ", " are close friends", "funny thing, ")
    assert opens_on(" and ", " left early", "I met Ana at noon")  # a later clause's subject


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Norbrook Freight moved its HQ to Tilburg", ["Norbrook Freight", "Tilburg"]),
        ("Quentin does QA for Halden Systems", ["Quentin", "Halden Systems"]),
        (
            "my niece Ottavia started her PhD at Corlett University",
            ["Ottavia", "Corlett University"],
        ),
        ("Ottavia joined NASA last year", ["Ottavia", "NASA"]),  # no possessive, no verb cue
    ],
)
def test_an_abbreviated_noun_after_a_possessive_or_a_verb_is_no_name(
    sentence: str, expected: list[str]
) -> None:
    assert [n.name for n in names_in(sentence)] == expected


def test_a_manager_and_colleague_share_the_workplace_said_with_them() -> None:
    said = "Ysolde manages Bertil over at Harrow Mills, they get on"
    relations = [
        ExtractedRelation("Ysolde", "MANAGER_OF", "Bertil", said),
        ExtractedRelation("Bertil", "WORKS_AT", "Harrow Mills", said),
        ExtractedRelation("Ysolde", "RELATED", "Harrow Mills", said),
        ExtractedRelation("Ysolde", "RELATED", "Fenmoor", "Ysolde grew up near Fenmoor"),
    ]
    out = share_workplaces(relations)
    assert out[2] == ExtractedRelation("Ysolde", "WORKS_AT", "Harrow Mills", said)
    assert out[3] == relations[3]  # another sentence: nothing shared
    # without a work tie, no workplace is shared
    assert share_workplaces(relations[1:]) == relations[1:]


async def _typed_turn(typer: RelationTyper, *said: tuple[str, str]) -> set[Triple]:
    roles = ("user", "assistant")
    turn = [TurnText(roles[i % 2], text, name) for i, (name, text) in enumerate(said)]
    found = await link_turn(
        turn, await RuleBasedExtractor().extract(turn, ExtractionPolicy()), typer
    )
    return {(r.source, r.type, r.target) for r in found.relations if r.type not in UNTYPED}


def test_he_or_she_before_any_name_is_the_last_person_named_earlier() -> None:
    turn = [
        TurnText("user", "have you seen Hortense lately?", "Aurelie"),
        TurnText("assistant", "yes, she's been my best friend for years", "Bram"),
    ]
    assert antecedents(turn) == {"yes, she's been my best friend for years": "Hortense"}
    # a relative's possessor is not who "he" is; a named relative after it is
    assert antecedents([TurnText("user", "Kai is Dana's kid. He goes to Fenby School")]) == {
        "He goes to Fenby School": "Kai"
    }
    # a name before the pronoun is found in its own sentence; a speaker is never "she"
    assert antecedents([TurnText("user", "Hortense is here. Odile said she left")]) == {}
    assert antecedents([TurnText("user", "Bram is my name. He is me", "Bram")]) == {}


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        (
            (("Aurelie", "have you seen Hortense lately?"),
             ("Bram", "yes, she's been my best friend for years")),
            {("Hortense", "BEST_FRIEND_OF", "Bram")},
        ),
        (
            (("Aurelie", "is Oswin still around?"),
             ("Bram", "yeah, his brother Tobiah moved in with him")),
            {("Tobiah", "BROTHER_OF", "Oswin")},
        ),
        (
            (("Aurelie", "can you swap with me?"),
             ("Bram", "I'd have to ask Ines, she's my supervisor")),
            {("Ines", "MANAGER_OF", "Bram")},
        ),
    ],
)  # fmt: skip
async def test_relatives_of_a_person_named_in_an_earlier_message(
    typer: RelationTyper, said: tuple[tuple[str, str], ...], expected: set[Triple]
) -> None:
    assert await _typed_turn(typer, *said) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # "there's" says its own subject: the speaker is not "up in Tromsdal"
        (
            "up in Tromsdal there's this little bakery, Kaffehus, that my aunt Hedda runs",
            {("Hedda", "AUNT_OF", "user")},
        ),
        # an event in a place is not a home
        (
            "my cousin Anselm is getting married in Kinsale in june",
            {("Anselm", "COUSIN_OF", "user")},
        ),
        ("our son Piet is on holiday in Lagos this week", {("Piet", "SON_OF", "user")}),
    ],
)
async def test_objects_subjects_and_events_the_words_do_not_make_a_relation(
    typer: RelationTyper, text: str, expected: set[Triple]
) -> None:
    assert await typed(typer, text) == expected


def test_a_moves_origin_is_where_the_subject_was() -> None:
    assert tense("just moved to Kelso", " just moved to Kelso from") == "past"
    assert tense("moved from Delft to", " moved from Delft to") == "present"


def test_a_possessive_after_a_preposition_owns_what_follows_it() -> None:
    names = {"user": "person", "bearnote": "name"}
    sentence = "i still use Bearnote for my own notes"
    pair = pair_of("user", "Bearnote", sentence, mentions(sentence, names, "user", {}), names)
    assert pair is not None
    assert pair.between == " still use "  # not " for ": "my" owns the notes


def test_a_name_opening_a_sentence_before_an_irregular_past_is_its_subject() -> None:
    assert [n.name for n in names_in("Ysolde spent ten years in Tromsø")] == ["Ysolde", "Tromsø"]
    assert [n.name for n in names_in("Congratulations on the move to Tromsø")] == ["Tromsø"]


async def test_a_later_clause_that_borrows_the_subject_joins_it_to_its_own_place(
    typer: RelationTyper,
) -> None:
    text = "Ysolde spent ten years in Tromsø before settling in Bergen"
    assert await typed(typer, text) == {
        ("Ysolde", "LIVED_IN", "Tromsø"),
        ("Ysolde", "LIVES_IN", "Bergen"),
    }
