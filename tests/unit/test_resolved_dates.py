"""Relative dates in a memory row's text are resolved against the turn's event time (issue 16):
"last Saturday" read a year later must still say which Saturday."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engine.adapters.memory import HashingEmbedder
from engine.ingest.dates import with_resolved_dates
from engine.scoping import TenantFilter
from schemas.inputs import turn_recorded
from tests.support.engine import InMemoryPorts

MONDAY_8_MAY_2023 = int(datetime(2023, 5, 8, 14, 0, tzinfo=UTC).timestamp() * 1000)


@pytest.mark.parametrize(
    ("said", "meant"),
    [
        ("We adopted her last Saturday!", "We adopted her last Saturday (2023-05-06)!"),
        ("I went yesterday", "I went yesterday (2023-05-07)"),
        ("the day before yesterday", "the day before yesterday (2023-05-06)"),
        ("Today was long", "Today (2023-05-08) was long"),
        ("see you tomorrow", "see you tomorrow (2023-05-09)"),
        ("see you next Friday", "see you next Friday (2023-05-12)"),
        ("this Wednesday", "this Wednesday (2023-05-10)"),
        ("last Monday", "last Monday (2023-05-01)"),
        ("two weeks ago we met", "two weeks ago (2023-04-24) we met"),
        ("3 days ago", "3 days ago (2023-05-05)"),
        ("a week ago", "a week ago (2023-05-01)"),
        ("a couple of months ago", "a couple of months ago (2023-03)"),
        ("twelve months ago", "twelve months ago (2022-05)"),
        ("Last year I ran", "Last year (2022) I ran"),
        ("last month", "last month (2023-04)"),
        ("next month", "next month (2023-06)"),
        ("last weekend", "last weekend (2023-05-06)"),
        ("last week", "last week (the week of 2023-05-01)"),
    ],
)
def test_a_relative_date_is_followed_by_the_date_it_meant(said: str, meant: str) -> None:
    assert with_resolved_dates(said, MONDAY_8_MAY_2023) == meant


@pytest.mark.parametrize(
    "vague", ["a few weeks ago", "recently", "on Saturday", "yesterdays", "the last time we met"]
)
def test_vague_or_lookalike_phrases_are_left_as_they_are(vague: str) -> None:
    assert with_resolved_dates(vague, MONDAY_8_MAY_2023) == vague


def test_resolving_twice_changes_nothing() -> None:
    once = with_resolved_dates("yesterday and two years ago", MONDAY_8_MAY_2023)
    assert once == "yesterday (2023-05-07) and two years ago (2021)"
    assert with_resolved_dates(once, MONDAY_8_MAY_2023) == once


def test_a_time_no_calendar_holds_leaves_the_text() -> None:
    assert with_resolved_dates("yesterday", 10**18) == "yesterday"


async def test_the_stored_row_says_when_but_the_transcript_keeps_the_words() -> None:
    ports = InMemoryPorts(HashingEmbedder())
    body = {
        "agentWallet": "0xA",
        "userAddress": "u",
        "threadId": "t",
        "userMessage": "We adopted a dog last Saturday",
        "assistantMessage": "Congratulations!",
        "occurredAt": MONDAY_8_MAY_2023,
    }
    await ports.recorder().record(turn_recorded(body))

    [row] = ports.memory.rows()
    assert "last Saturday (2023-05-06)" in row.content
    [transcript] = await ports.transcripts.recent(TenantFilter("0xA", "u"), 5)
    assert transcript.messages[0].content == "We adopted a dog last Saturday"


def test_last_weekend_on_a_sunday_is_the_one_before_this_one() -> None:
    sunday = int(datetime(2023, 5, 14, 9, 0, tzinfo=UTC).timestamp() * 1000)
    assert with_resolved_dates("last weekend", sunday) == "last weekend (2023-05-06)"
    assert with_resolved_dates("this weekend", sunday) == "this weekend (2023-05-13)"


@pytest.mark.parametrize("lookalike", ["last n\u0131ght", "la\u017ft Saturday", "next \u017funday"])
def test_a_lookalike_letter_is_left_as_said_instead_of_failing_the_turn(lookalike: str) -> None:
    # the pattern matches case-insensitively, which takes a dotless i or a long s for i or s;
    # resolving such a match used to raise (KeyError / ValueError) and the turn was not stored
    assert with_resolved_dates(f"we met {lookalike}", MONDAY_8_MAY_2023) == f"we met {lookalike}"
