"""Mechanisms of relation extraction found on the spent holdout3 split (issue 32, stop 46):
a name said whole, a possessor's relative, casing that means something, a role held once, a
school said with no verb, a person reached by "by". Each checks a structure with words of
its own, not a fixture's case."""

from __future__ import annotations

import pytest

from engine.ingest.extraction.names import written_in_lower_case
from engine.ingest.extraction.relation_typer import RelationTyper
from tests.support.relations import typed


async def test_a_relative_named_with_a_surname_is_named_whole(typer: RelationTyper) -> None:
    found = await typed(typer, "my neighbour Perpetua Nwachukwu fixed our fence at last")
    assert ("Perpetua Nwachukwu", "NEIGHBOUR_OF", "user") in found
    assert not any(t[0] == "Perpetua" for t in found)
    two = await typed(typer, "my cousin Aurelio Bastos Lima moved to Recife")
    assert ("Aurelio Bastos Lima", "COUSIN_OF", "user") in two
    assert ("Aurelio Bastos Lima", "LIVES_IN", "Recife") in two


async def test_a_name_ends_at_a_possessive(typer: RelationTyper) -> None:
    found = await typed(typer, "my brother Casper's dog Nugget ate my sandwich")
    assert ("Casper", "BROTHER_OF", "user") in found


async def test_a_relatives_noun_that_possesses_is_not_the_relation(typer: RelationTyper) -> None:
    godparent = await typed(typer, "Rosalind is my son's godmother, she lives in Truro")
    assert ("Rosalind", "SON_OF", "user") not in godparent
    plain = await typed(typer, "Rosalind is my sister")
    assert ("Rosalind", "SISTER_OF", "user") in plain


@pytest.mark.parametrize(
    ("message", "lower"),
    [
        ("i moved to lyon last year", True),  # no capital at all but "i"
        ("moved to lyon last year", True),
        ("i live in Busan and teach english", True),  # one name capitalised, "i": mixed
        ("my boss Halvard Moen saw me when i called in sick", False),  # a full name written
        ("I live in Lyon", False),
    ],
)
def test_casing_means_something_once_a_full_name_is_capitalised(message: str, lower: bool) -> None:
    assert written_in_lower_case(message) is lower


async def test_a_common_word_after_in_is_no_home_when_names_are_capitalised(
    typer: RelationTyper,
) -> None:
    found = await typed(
        typer, "my manager Oriel Fairweather is lovely, even when i call in sick on mondays"
    )
    assert not {t for t in found if t[1] in ("LIVES_IN", "LIVED_IN")}


async def test_a_role_held_once_is_not_held_now(typer: RelationTyper) -> None:
    once = await typed(typer, "Thaddeus, who used to be my landlord, runs a bakery now")
    assert not any(t[0] == "Thaddeus" and t[2] == "user" for t in once)
    kin = await typed(typer, "Wilhelmina was my sister, and she was kind")
    assert ("Wilhelmina", "SISTER_OF", "user") in kin  # a relative by birth stays one


async def test_at_a_school_with_no_verb_is_study(typer: RelationTyper) -> None:
    found = await typed(typer, "my daughter Imogen is at Fallowmere College, second year")
    assert ("Imogen", "STUDIES_AT", "Fallowmere College") in found
    assert ("Imogen", "WORKS_AT", "Fallowmere College") not in found
    abroad = await typed(typer, "Teodora just started at the Universidade de Coimbra")
    assert ("Teodora", "STUDIES_AT", "Universidade de Coimbra") in abroad
    teaching = await typed(typer, "Imogen teaches chemistry at Fallowmere College")
    assert ("Imogen", "STUDIES_AT", "Fallowmere College") not in teaching


async def test_a_person_reached_by_by_is_no_home(typer: RelationTyper) -> None:
    found = await typed(typer, "went to a reading by Marguerite Oyelowo about tidal maps")
    assert not {t for t in found if t[1] in ("LIVES_IN", "LIVED_IN", "FROM")}
