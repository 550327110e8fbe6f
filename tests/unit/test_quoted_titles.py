"""A title in quotes is one name (holdout3's lesson: "just finished 'The Cartographer's
Widow' by Ondrej Malusek" gave the user a book called "Cartographer")."""

from __future__ import annotations

import pytest

from engine.ingest.extraction.names import names_in
from engine.ingest.extraction.relation_typer import RelationTyper
from engine.ingest.extraction.titles import quoted_titles
from tests.support.relations import typed


@pytest.mark.parametrize(
    ("sentence", "titles"),
    [
        (
            "just finished 'The Cartographer's Widow' by Ondrej Malusek",
            ["The Cartographer's Widow"],
        ),
        (
            'we watched "The Lighthouse Keeper\'s Daughter" twice',
            ["The Lighthouse Keeper's Daughter"],
        ),
        (
            "reading “A Memory of Light” and ‘Station Eleven’",
            ["A Memory of Light", "Station Eleven"],
        ),
        ("she said 'see you later' and left", []),  # a quote, not a title
        ("I loved 'Dune'", []),  # one word: the name finder reads it already
        ("it's Anna's car, isn't it", []),  # apostrophes, no quotes
    ],
)
def test_quoted_titles_are_quoted_runs_in_title_case(sentence: str, titles: list[str]) -> None:
    assert [t for _, _, t in quoted_titles(sentence)] == titles


def test_the_name_finder_reads_a_quoted_title_as_one_name() -> None:
    found = [n.name for n in names_in("just finished 'The Cartographer's Widow' by Ondrej Malusek")]
    assert found == ["The Cartographer's Widow", "Ondrej Malusek"]


async def test_a_book_read_is_its_whole_quoted_title(typer: RelationTyper) -> None:
    said = "just finished 'The Cartographer's Widow' by Ondrej Malusek, cried on the train"
    found = await typed(typer, said)
    assert ("user", "READ", "The Cartographer's Widow") in found
    assert ("user", "READ", "Cartographer") not in found
