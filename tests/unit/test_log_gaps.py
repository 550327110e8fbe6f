"""A database holding rows written before the log's first record (issue 31), the pure parts:
the log's start per topic, and which kinds of rows it cannot rebuild."""

from __future__ import annotations

from schemas import topics
from services.ops.log_gaps import FEEDS, SKEW_MS, log_starts, older_than_log, when
from services.ops.log_reach import Reach
from services.ops.replay import SOURCE_TOPICS, ReplayReport

DAY = 86_400_000
START = 1_780_000_000_000  # 2026-05-28T20:26:40Z


def test_the_log_starts_at_the_earliest_first_record_of_a_topic_and_an_empty_one_not_at_all() -> (
    None
):
    reach = {
        (topics.TURNS, 0): Reach(0, 10, START + 5),
        (topics.TURNS, 1): Reach(0, 4, START),
        (topics.TURNS, 2): Reach(0, 0, None),  # holds no record
        (topics.KNOWLEDGE, 0): Reach(0, 0, None),
    }
    assert log_starts(reach) == {topics.TURNS: START}


def test_rows_written_before_the_log_starts_cannot_be_rebuilt() -> None:
    starts = {topics.TURNS: START, topics.WORKFLOWS: START + DAY}
    [line] = older_than_log({"session": START - DAY}, starts, database="database live")
    assert line == (
        "memory.turns.v1 and memory.workflows.v1 cannot be rebuilt: database live holds "
        f"events from {when(START - DAY)} (session rows), the log starts at {when(START)}"
    )
    assert when(START) == "2026-05-28T20:26:40+00:00"


def test_rows_written_after_the_log_starts_or_within_the_clock_skew_are_rebuildable() -> None:
    starts = {topics.TURNS: START, topics.REMEMBER: START, topics.KNOWLEDGE: START}
    oldest = {"session": START + 1, "fact": START - SKEW_MS + 1, "knowledge": START}
    assert older_than_log(oldest, starts) == []
    # a row kind fed by two topics is compared with the earlier of their starts
    assert older_than_log({"fact": START - 1000}, {topics.FACTS: START - DAY}) == []
    # rows no source topic feeds (archives: the jobs write them) are not compared
    assert older_than_log({"archive": 0}, starts) == []


def test_rows_whose_topics_hold_no_record_cannot_be_rebuilt() -> None:
    [line] = older_than_log({"knowledge": START}, {topics.TURNS: START - DAY})
    assert line.startswith("memory.knowledge.v1 cannot be rebuilt: the database holds events")
    assert line.endswith("(knowledge rows), the log holds no record of them")


def test_every_topic_a_row_kind_is_fed_by_is_one_the_replay_reads() -> None:
    assert {topic for feeding in FEEDS.values() for topic in feeding} == set(SOURCE_TOPICS)


def test_a_report_with_any_gap_is_not_whole() -> None:
    whole = ReplayReport("rebuilt", "p", 10, 1.0)
    assert whole.gaps == ()
    older = ReplayReport("rebuilt", "p", 10, 1.0, older=("turns cannot be rebuilt",))
    truncated = ReplayReport("rebuilt", "p", 10, 1.0, truncated=("partition 3 starts at 9",))
    assert older.gaps == ("turns cannot be rebuilt",)
    assert truncated.gaps == ("partition 3 starts at 9",)
