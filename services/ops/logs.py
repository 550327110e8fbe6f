"""Log volume that stays bounded when the same thing fails over and over.

A consumer that meets the same failure on every read (a record it cannot handle, a store that
is down) would otherwise write the same line hundreds of times a second. `RepeatFilter`, on
the CLI's log handlers, lets each distinct line through `burst` times per `window_seconds`;
the first line after a quiet spell says how many copies were dropped.

`TraceIds`, on the same handlers, ends each line written inside a traced span with its
`trace_id=` (docs/operations.md#traces): the line and the trace store find each other.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from cachetools import LRUCache
from opentelemetry import trace

Key = tuple[str, int, str]


class RepeatFilter(logging.Filter):
    """Drops copies of a record (same logger, level and text) beyond `burst` per window.

    Memory is bounded: at most `max_keys` distinct lines are remembered (least recently
    seen forgotten first)."""

    def __init__(
        self,
        *,
        burst: int = 5,
        window_seconds: float = 60.0,
        max_keys: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        if burst < 1 or window_seconds <= 0 or max_keys < 1:
            raise ValueError("burst and max_keys must be >= 1 and window_seconds > 0")
        self._burst = burst
        self._window = window_seconds
        self._clock = clock
        # key -> [window start, records in this window, suppressed since last shown]
        self._seen: LRUCache[Key, list[float]] = LRUCache(maxsize=max_keys)

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, record.getMessage())
        now = self._clock()
        state = self._seen.get(key)
        if state is None or now - state[0] >= self._window:
            dropped = int(state[2]) if state is not None else 0
            self._seen[key] = [now, 1, 0]
            if dropped:
                record.msg = f"{record.getMessage()} [{dropped} identical line(s) dropped]"
                record.args = None
            return True
        state[1] += 1
        if state[1] <= self._burst:
            return True
        state[2] += 1
        return False


def bound_repeats(logger: logging.Logger | None = None) -> None:
    """Put a `RepeatFilter` on every handler of `logger` (the root logger by default)."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, RepeatFilter) for f in handler.filters):
            handler.addFilter(RepeatFilter())


class TraceIds(logging.Filter):
    """Stamps each record with the current span's `trace_id` and `span_id` (hex; absent
    outside a span) and ends its message with `trace_id=…`, so a plain-text line carries it
    as well as a structured one (`record.trace_id`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "trace_id", None):
            return True  # stamped by another handler's filter
        found = trace.get_current_span().get_span_context()
        if found.is_valid:
            trace_id = format(found.trace_id, "032x")
            record.__dict__.update(trace_id=trace_id, span_id=format(found.span_id, "016x"))
            record.msg = f"{record.getMessage()} trace_id={trace_id}"
            record.args = None
        return True


def stamp_traces(logger: logging.Logger | None = None) -> None:
    """Put a `TraceIds` filter on every handler of `logger` (the root logger by default)."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, TraceIds) for f in handler.filters):
            handler.addFilter(TraceIds())
