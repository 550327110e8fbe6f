"""The pure helpers of the load benchmark (`benchmarks.load_stats`,
`benchmarks.load_traffic`): percentiles, summaries, lag and the stored check."""

from __future__ import annotations

import math
import random

import pytest

from benchmarks.load_stats import (
    check_stored,
    drain_time,
    error_kind,
    format_errors,
    format_op,
    format_seconds,
    max_lag,
    percentile,
    summarize,
)
from benchmarks.load_traffic import simulated_turn
from schemas.inputs import turn_recorded
from services.sdk.client import RequestFailed


def test_percentile_interpolates_between_closest_ranks() -> None:
    values = [4.0, 1.0, 3.0, 2.0]  # unsorted on purpose
    assert percentile(values, 0) == 1.0
    assert percentile(values, 100) == 4.0
    assert percentile(values, 50) == 2.5
    assert percentile(values, 95) == pytest.approx(3.85)
    assert percentile(list(range(101)), 99) == 99


def test_percentile_of_one_value_and_of_none() -> None:
    assert percentile([7.0], 99) == 7.0
    assert math.isnan(percentile([], 50))


def test_percentile_clamps_q() -> None:
    assert percentile([1.0, 2.0], 150) == 2.0
    assert percentile([1.0, 2.0], -5) == 1.0


def test_summarize_counts_throughput_over_the_run() -> None:
    op = summarize("pre_turn", [10.0, 20.0, 30.0, 40.0], {"timeout": 1}, seconds=2.0)
    assert (op.n, op.per_second, op.p50, op.max) == (4, 2.0, 25.0, 40.0)
    assert op.errors == {"timeout": 1}
    empty = summarize("x", [], {}, seconds=0)
    assert empty.per_second == 0.0
    assert math.isnan(empty.p99)
    assert math.isnan(empty.max)


def test_format_errors_and_op_row() -> None:
    assert format_errors({}) == "0"
    assert format_errors({"timeout": 0}) == "0"
    assert format_errors({"request failed": 1, "timeout": 2}) == "3 (timeout 2, request failed 1)"
    row = format_op(summarize("post_turn publish → ack", [1.0, 3.0], {}, 1.0))
    assert row.startswith("post_turn publish → ack")
    assert row.split()[-7:] == ["2", "2.0", "2.0", "2.9", "3.0", "3.0", "0"]


def test_error_kind() -> None:
    assert error_kind(TimeoutError()) == "timeout"
    assert error_kind(RequestFailed("boom")) == "request failed"
    assert error_kind(ConnectionError()) == "ConnectionError"


def test_max_lag_and_drain_time() -> None:
    samples = [
        (0.0, {"a": 0, "b": 0}),
        (2.0, {"a": 50, "b": 3}),
        (4.0, {"a": 80}),  # b missing: no lag
        (5.0, {"a": 30, "b": 0}),
        (5.5, {"a": 0, "b": 2}),
        (6.0, {"a": 0, "b": 0}),
        (6.5, {"a": 0, "b": 0}),
    ]
    assert max_lag(samples, "a") == 80
    assert max_lag(samples, "b") == 3
    assert max_lag(samples, "missing") == 0
    assert max_lag([], "a") == 0
    assert drain_time(samples, "a", since=4.5) == 1.0  # 0 from 5.5 on
    assert drain_time(samples, "b", since=4.5) == 1.5  # back up at 5.5, 0 from 6.0
    assert drain_time(samples, "a", since=6.0) == 0.0
    assert drain_time(samples[:4], "a", since=4.5) is None  # no sample after the deadline
    assert drain_time(samples[:5], "b", since=4.5) is None  # still lagging at the last one
    assert format_seconds(None) == "not drained"
    assert format_seconds(1.25) == "1.2 s"


def test_check_stored_matches() -> None:
    check = check_stored(
        {"t1": 2, "t2": 3}, set(), ["t1", "t2"], ["t1", "t1", "t2", "t2", "t2"], ["t1", "t2"]
    )
    assert check.ok
    assert (check.published, check.stored, check.duplicates, check.missing) == (2, 2, 0, 0)


def test_check_stored_reports_duplicates_missing_and_unexpected() -> None:
    check = check_stored(
        {"t1": 2, "t2": 2},
        set(),
        ["t1", "t1", "t3"],
        ["t1", "t1", "t1", "t1", "t3", "t3"],
        ["t1", "t1"],
    )
    assert not check.ok
    assert (check.stored, check.duplicates, check.missing, check.unexpected) == (2, 1, 1, 1)
    assert (check.messages_expected, check.messages_stored) == (4, 6)
    assert (check.turn_rows, check.turn_row_duplicates) == (1, 1)


def test_check_stored_leaves_unacknowledged_turns_out() -> None:
    # t9's publish timed out: stored or not, it is not held against the run
    for stored in (["t1"], ["t1", "t9"]):
        check = check_stored({"t1": 2}, {"t9"}, stored, ["t1", "t1"] + stored[1:] * 2, stored)
        assert check.ok


def test_simulated_turns_are_valid_and_seeded() -> None:
    rng, again = random.Random(3), random.Random(3)
    turns = [simulated_turn(rng, tool_share=0.5, fact_share=0.5) for _ in range(50)]
    assert turns == [simulated_turn(again, tool_share=0.5, fact_share=0.5) for _ in range(50)]
    assert any("toolEvents" in t for t in turns)
    assert any(t["userMessage"].startswith("I live in") for t in turns)
    scope = {"agentWallet": "0xagent", "userAddress": "u", "threadId": "t"}
    for turn in turns:
        event = turn_recorded({**scope, **turn})
        assert len(event.messages) == 2
        assert len(event.tool_events) == len(turn.get("toolEvents", []))
