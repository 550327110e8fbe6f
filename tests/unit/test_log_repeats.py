"""`RepeatFilter`: the same line failing over and over is logged at a bounded rate."""

from __future__ import annotations

import logging

import pytest

from services.ops.logs import RepeatFilter, bound_repeats


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def record(msg: str, *args: object, name: str = "services.stream.guard") -> logging.LogRecord:
    return logging.LogRecord(name, logging.ERROR, __file__, 1, msg, args, None)


def test_identical_lines_beyond_the_burst_are_dropped_and_counted_later() -> None:
    clock = Clock()
    f = RepeatFilter(burst=3, window_seconds=10, clock=clock)
    passed = [f.filter(record("attempt failed (%s)", "boom")) for _ in range(125)]
    assert passed.count(True) == 3
    clock.now = 10
    again = record("attempt failed (%s)", "boom")
    assert f.filter(again)
    assert again.getMessage() == "attempt failed (boom) [122 identical line(s) dropped]"


def test_different_lines_loggers_and_levels_are_counted_apart() -> None:
    f = RepeatFilter(burst=1, window_seconds=60, clock=Clock())
    assert f.filter(record("a"))
    assert not f.filter(record("a"))
    assert f.filter(record("b"))
    assert f.filter(record("a", name="services.other"))
    warning = record("a")
    warning.levelno = logging.WARNING
    assert f.filter(warning)


def test_memory_is_bounded() -> None:
    f = RepeatFilter(burst=1, window_seconds=60, max_keys=2, clock=Clock())
    for text in ("a", "b", "c"):
        assert f.filter(record(text))
    assert f.filter(record("a"))  # forgotten (least recently seen), so shown again


def test_bound_repeats_adds_one_filter_per_handler() -> None:
    logger = logging.getLogger("tests.log_repeats")
    handler = logging.StreamHandler()
    logger.addHandler(handler)
    try:
        bound_repeats(logger)
        bound_repeats(logger)
        assert sum(isinstance(f, RepeatFilter) for f in handler.filters) == 1
    finally:
        logger.removeHandler(handler)


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="burst"):
        RepeatFilter(burst=0)
