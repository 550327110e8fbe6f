"""Precision mechanisms of the relation typer found on the spent holdout2 split (issue 32):
when the words joining two ends do not state a typed relation. Each checks a structure with
words of its own, not a fixture's case."""

from __future__ import annotations

import pytest

from engine.ingest.extraction.appositives import appositive_kin
from engine.ingest.extraction.homes import share_homes
from engine.ingest.extraction.relation_typer import _OF_RELATIVE, RelationTyper
from engine.ingest.extraction.types import ExtractedRelation, TurnText
from tests.support.relations import Triple, typed


async def test_a_workplace_said_in_the_past_is_no_job_now(typer: RelationTyper) -> None:
    past = await typed(typer, "Gunnhild used to be at Marrowby Freight, apparently")
    assert not {t for t in past if t[1] == "WORKS_AT"}
    now = await typed(typer, "Gunnhild has been at Marrowby Freight since spring")
    assert ("Gunnhild", "WORKS_AT", "Marrowby Freight") in now


@pytest.mark.parametrize(
    ("words", "of_relative"),
    [
        ("aunt in", True),  # the aunt's town
        ("son's flat in", True),
        ("husband) is from", True),
        ("boss is this guy", True),
        ("manager at", False),  # a role at a workplace: the speaker's too
        ("best mate", False),  # the noun alone is the relative
        ("cousin", False),
        ("moved to", False),
    ],
)
def test_words_opening_with_a_relatives_noun_are_said_of_the_relative(
    words: str, of_relative: bool
) -> None:
    assert (_OF_RELATIVE.match(words) is not None) == of_relative


async def test_a_place_said_of_a_relative_is_not_the_subjects_home(typer: RelationTyper) -> None:
    found = await typed(typer, "Berenike is staying with her aunt in Tromsø for the summer")
    assert not {t for t in found if t[0] == "Berenike" and t[2] == "Tromsø"}


@pytest.mark.parametrize(
    ("text", "wrong"),
    [
        ("grew up in Tauranga but been in Perth nine years", ("user", "FROM", "Perth")),
        (
            "Quillfeather Ltd has its office in Leeds, which is where Ambrose moved",
            ("Quillfeather Ltd", "BASED_IN", "Ambrose"),
        ),
    ],
)
async def test_words_that_cross_a_nearer_fitting_name_before_a_turn_type_nothing(
    typer: RelationTyper, text: str, wrong: Triple
) -> None:
    assert wrong not in await typed(typer, text)


async def test_a_move_from_one_place_to_another_still_crosses_nothing(
    typer: RelationTyper,
) -> None:
    found = await typed(typer, "moved from Tartu to Pärnu last spring for a job at Lindvik Oy")
    assert ("user", "LIVES_IN", "Pärnu") in found


@pytest.mark.parametrize("verb", ["nearly enrolled", "almost enrolled"])
async def test_what_nearly_happened_did_not(typer: RelationTyper, verb: str) -> None:
    assert not await typed(typer, f"I {verb} at Halvorsen College in 2020 but changed my mind")


@pytest.mark.parametrize(
    ("text", "thing"),
    [
        (
            "Ingeborg and I worked together at Kestrelby for years, now she's at Morrow Health",
            "Kestrelby",
        ),
        (
            "Pernille works for Brightwater Capital, which is based out of Exeter, but she's "
            "fully remote from her place in Truro",
            "Exeter",
        ),
    ],
)
async def test_a_place_or_an_organisation_is_no_ones_employee_or_resident(
    typer: RelationTyper, text: str, thing: str
) -> None:
    assert not {t for t in await typed(typer, text) if t[0] == thing}


async def test_a_name_reached_by_off_or_onto_is_no_home(typer: RelationTyper) -> None:
    found = await typed(typer, "we moved the whole office off Basecamp last year, so much better")
    assert not {t for t in found if t[1] in ("LIVES_IN", "LIVED_IN", "FROM")}


async def test_words_in_brackets_after_a_name_are_an_aside(typer: RelationTyper) -> None:
    found = await typed(typer, "Ottavia (my wife) is from Bergamo and still cheers for Atalanta")
    assert ("Ottavia", "FROM", "Bergamo") in found
    assert ("user", "FROM", "Bergamo") not in found


async def test_the_words_joining_the_ends_start_after_a_colon(typer: RelationTyper) -> None:
    found = await typed(typer, "been on a massive sci-fi kick lately: read Tallow Embers")
    assert ("user", "READ", "Tallow Embers") in found


async def test_a_names_s_before_a_possessive_is_is(typer: RelationTyper) -> None:
    found = await typed(typer, "Radka's my neighbour, she grows tomatoes on the balcony")
    assert ("Radka", "NEIGHBOUR_OF", "user") in found


def test_who_lives_somewhere_with_one_lives_there_too() -> None:
    said = "my brother Aurel lives in Cluj with his wife, Ilinca, and two cats"
    other = "my brother Aurel lives in Cluj and Ilinca visits sometimes"
    relations = [
        ExtractedRelation("Aurel", "LIVES_IN", "Cluj", said),
        ExtractedRelation("Ilinca", "RELATED", "Cluj", said),
        ExtractedRelation("Aurel", "LIVES_IN", "Cluj", other),
        ExtractedRelation("Ilinca", "RELATED", "Cluj", other),
    ]
    out = share_homes(relations)
    assert out[1] == ExtractedRelation("Ilinca", "LIVES_IN", "Cluj", said)
    assert out[3].type == "RELATED"  # no "with": a visitor is no resident


async def test_a_home_said_with_a_relative_is_the_relatives_too(typer: RelationTyper) -> None:
    found = await typed(typer, "my son Teodor lives in Brașov with his girlfriend Oana")
    assert ("Oana", "LIVES_IN", "Brașov") in found


@pytest.mark.parametrize(
    ("text", "kin"),
    [
        ("a cousin of mine, Ruairí, just moved to Galway", ("Ruairí", "COUSIN_OF", "user")),
        ("the woman next door, Hedda, waters our plants", ("Hedda", "NEIGHBOUR_OF", "user")),
        ("Hedda, an old colleague of mine, waters our plants", ("Hedda", "COLLEAGUE_OF", "user")),
        ("a dog of mine, Rex, sleeps on the sofa", ("Rex", "PET_OF", "user")),
    ],
)
async def test_a_relative_named_in_apposition(typer: RelationTyper, text: str, kin: Triple) -> None:
    assert kin in await typed(typer, text)


def test_a_pet_in_apposition_is_a_pet_as_every_pet_is_not_a_dog_of() -> None:
    # the appositive step typed a pet by its noun (DOG_OF) where every other step says PET_OF
    said = "a dog of mine, Rex, sleeps on the sofa"
    links = [ExtractedRelation("user", "MENTIONS", "Rex", said)]
    assert appositive_kin([TurnText("user", said)], links) == [
        ExtractedRelation("Rex", "PET_OF", "user", said)
    ]


def test_an_apposition_needs_its_comma_and_the_speakers_words() -> None:
    said = "the woman next door and Hedda water our plants"
    links = [ExtractedRelation("user", "MENTIONS", "Hedda", said)]
    assert appositive_kin([TurnText("user", said)], links) == links
    apposed = "the woman next door, Hedda, waters our plants"
    links = [ExtractedRelation("user", "MENTIONS", "Hedda", apposed)]
    assert appositive_kin([TurnText("assistant", apposed)], links) == links  # unnamed: unread


async def test_a_book_read_as_it_is_the_name_said_last_before_it(typer: RelationTyper) -> None:
    found = await typed(typer, "Wendeline lent me Gravel Psalms and I read it in one sitting")
    assert ("user", "READ", "Gravel Psalms") in found
    assert ("user", "READ", "Wendeline") not in found
    unread = await typed(typer, "Wendeline lent me Gravel Psalms but I haven't opened it")
    assert not {t for t in unread if t[1] == "READ"}


async def test_a_manager_said_by_a_noun_alone_is_the_end_after_it(typer: RelationTyper) -> None:
    found = await typed(typer, "new team lead started monday, Ekaterina Volkova, seems nice")
    assert ("Ekaterina Volkova", "MANAGER_OF", "user") in found
    assert ("user", "MANAGER_OF", "Ilse") in await typed(typer, "i manage Ilse these days")
