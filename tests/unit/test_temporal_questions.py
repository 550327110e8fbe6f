"""The period a question asks about steers packing (issue 16)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engine.retrieval.hits import Hit
from engine.retrieval.packing import pack
from engine.retrieval.temporal import Period, asked_period

ANCHOR = int(datetime(2023, 8, 20, 12, tzinfo=UTC).timestamp() * 1000)


def ms(*args: int) -> int:
    return int(datetime(*args, tzinfo=UTC).timestamp() * 1000)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("What did I read in May 2023?", ms(2023, 5, 1), ms(2023, 6, 1)),
        ("What did I read in May?", ms(2023, 5, 1), ms(2023, 6, 1)),
        # a month after the anchor's month, without a year: the one of the year before
        ("Where did we go in October?", ms(2022, 10, 1), ms(2022, 11, 1)),
        ("Any trips during December 2022", ms(2022, 12, 1), ms(2023, 1, 1)),
        ("What happened in 2022?", ms(2022, 1, 1), ms(2023, 1, 1)),
        ("What did Melanie do last year?", ms(2022, 1, 1), ms(2023, 1, 1)),
        ("this month", ms(2023, 8, 1), ms(2023, 9, 1)),
        ("last month", ms(2023, 7, 1), ms(2023, 8, 1)),
        ("last week", ms(2023, 8, 7), ms(2023, 8, 14)),
    ],
)
def test_the_asked_period(question: str, start: int, end: int) -> None:
    assert asked_period(question, ANCHOR) == Period(start, end)


@pytest.mark.parametrize(
    "question", ["When did Caroline move?", "You may like it", "What is 2023 - 1999?", "hi"]
)
def test_no_period_is_guessed(question: str) -> None:
    assert asked_period(question, ANCHOR) is None


def test_a_memory_from_the_asked_period_packs_first() -> None:
    hits = [
        Hit(
            layer="vectors", id="june", text="We went hiking", score=0.7, created_at=ms(2023, 6, 3)
        ),
        Hit(layer="vectors", id="may", text="We went hiking", score=0.6, created_at=ms(2023, 5, 9)),
    ]
    plain = pack(
        "Where did we go hiking?", {"vectors": hits}, layer_order=["vectors"], now_ms=ANCHOR
    )
    asked = pack(
        "Where did we go hiking in May?", {"vectors": hits}, layer_order=["vectors"], now_ms=ANCHOR
    )
    # same text: the fingerprint keeps one of them, and the asked period decides which
    assert [i.id for i in plain.items] == ["june"]
    assert [i.id for i in asked.items] == ["may"]


@pytest.mark.parametrize("question", ["What changed since May?", "Done by March?"])
def test_since_or_by_a_month_is_not_that_month(question: str) -> None:
    # "since May" asks about everything after it: boosting May itself would be wrong
    assert asked_period(question, ANCHOR) is None
