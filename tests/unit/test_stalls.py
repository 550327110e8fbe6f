"""`StallWatch`: a partition is stalled while work waits and its committed offset stands."""

from __future__ import annotations

import pytest

from services.stream.stalls import StallWatch

P = ("memory.turns.v1", 3)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_lag_with_an_offset_that_stands_becomes_a_stall_after_the_limit() -> None:
    clock = Clock()
    watch = StallWatch(60, clock=clock)
    assert watch.observe("g", {P: 4}, {P: 10}) == {P: False}
    clock.now += 59
    assert watch.observe("g", {P: 4}, {P: 10}) == {P: False}
    clock.now += 1
    assert watch.observe("g", {P: 5}, {P: 10}) == {P: True}
    [stall] = watch.stalls()
    assert (stall.group, stall.topic, stall.partition, stall.lag) == ("g", P[0], P[1], 5)
    assert "unchanged for 60s with 5 message(s) waiting" in stall.describe()


def test_progress_or_an_empty_backlog_clears_a_stall() -> None:
    clock = Clock()
    watch = StallWatch(10, clock=clock)
    watch.observe("g", {P: 2}, {P: 7})
    clock.now += 10
    assert watch.observe("g", {P: 2}, {P: 7}) == {P: True}
    assert watch.observe("g", {P: 1}, {P: 8}) == {P: False}  # the offset moved
    assert watch.stalls() == []
    clock.now += 10
    assert watch.observe("g", {P: 1}, {P: 8}) == {P: True}
    assert watch.observe("g", {P: 0}, {P: 8}) == {P: False}  # caught up
    clock.now += 30
    # new work arrives after a quiet hour: the clock starts when it arrives, not before
    assert watch.observe("g", {P: 3}, {P: 8}) == {P: False}


def test_an_idle_partition_without_a_commit_is_not_stalled() -> None:
    clock = Clock()
    watch = StallWatch(5, clock=clock)
    clock.now += 100
    assert watch.observe("g", {P: 0}, {}) == {P: False}
    assert watch.stalls() == []


def test_groups_are_watched_apart() -> None:
    clock = Clock()
    watch = StallWatch(5, clock=clock)
    watch.observe("a", {P: 1}, {P: 1})
    watch.observe("b", {P: 1}, {P: 1})
    clock.now += 5
    assert watch.observe("a", {P: 1}, {P: 1}) == {P: True}
    assert watch.observe("b", {P: 1}, {P: 2}) == {P: False}
    assert [s.group for s in watch.stalls()] == ["a"]


def test_the_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="after_seconds"):
        StallWatch(0)
