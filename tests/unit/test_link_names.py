"""`engine.ingest.extraction.names` (issue 32): names found by casing and cues, not by
lists of phrasings; chat openers that are capitalised only because a sentence starts there
are not names."""

from __future__ import annotations

import pytest

from engine.ingest.extraction.names import names_in, statement


@pytest.mark.parametrize(
    "sentence",
    [
        "Congratulations!",
        "Sounds lovely, enjoy it.",
        "Fair enough, we'll see.",
        "Went to the market with the kids.",
        "We'll probably stay home.",
        "That's a relief.",
        "Honestly the weather was awful.",
        "Exciting news about the flat.",
        "Of course I remember it.",
    ],
)
def test_a_capitalised_opener_that_is_not_a_subject_is_no_name(sentence: str) -> None:
    assert names_in(sentence) == []


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Marcus works at Tidewater Labs, which is based in Boston.", [
            ("Marcus", "name"), ("Tidewater Labs", "organisation"), ("Boston", "place")
        ]),
        ("Initech's head office sits in Austin, Texas.", [
            ("Initech", "organisation"), ("Austin", "place"), ("Texas", "place")
        ]),
        ("I'm doing my masters at the University of Tartu.", [
            ("University of Tartu", "organisation")
        ]),
        ("i live in lyon now, moved last year", [("Lyon", "place")]),
    ],
)  # fmt: skip
def test_names_and_their_cues(sentence: str, expected: list[tuple[str, str]]) -> None:
    lower = sentence.islower()
    assert [(n.name, n.type) for n in names_in(sentence, lower=lower)] == expected


def test_a_closing_question_keeps_the_statement_before_it() -> None:
    assert statement("unrelated but I'm from Izmir, did you know?") == (
        "unrelated but I'm from Izmir"
    )
    assert statement("Do you know if Orbis Bank is in Zurich, by any chance?") == ""


@pytest.mark.parametrize(
    ("sentence", "lower", "expected"),
    [
        # a title is part of the name it comes before
        ("Our head of department, Dr. Osei, is my manager", False, [("Dr. Osei", "person")]),
        ("my cat Mr. Whiskers sleeps on my keyboard", True, [("Mr. Whiskers", "person")]),
        # a name after an indefinite article is a kind of thing, not one named
        ("my flatmate Oona is doing a PhD at Blackmere University", False,
         [("Oona", "name"), ("Blackmere University", "organisation")]),
        # in a lower-case message a capitalised name is read as written, not as two words
        ("spent three years in Busan teaching english, now i'm in Auckland", True,
         [("Busan", "place"), ("Auckland", "place")]),
        # a place word heads a place's name, not a name it is inside of
        ("Ignatius works at Kelso Road Pharmacy on Elm Street", False,
         [("Ignatius", "name"), ("Kelso Road Pharmacy", "name"), ("Elm Street", "place")]),
    ],
)  # fmt: skip
def test_titles_articles_and_names_written_capitalised_in_lower_case(
    sentence: str, lower: bool, expected: list[tuple[str, str]]
) -> None:
    assert [(n.name, n.type) for n in names_in(sentence, lower=lower)] == expected
