"""The load benchmark's pure statistics: percentiles, per-operation summaries, error kinds,
consumer lag and drain time, and the exactly-once check of stored turns
(tests/unit/test_load_stats.py)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from services.sdk.client import RequestFailed


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation between the closest ranks (numpy's
    default); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * min(100.0, max(0.0, q)) / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True, slots=True)
class OpSummary:
    """One operation over a run: successful calls, their latencies (ms), failures by type."""

    name: str
    n: int
    per_second: float
    p50: float
    p95: float
    p99: float
    max: float
    errors: dict[str, int]


def summarize(
    name: str, latencies_ms: Sequence[float], errors: dict[str, int], seconds: float
) -> OpSummary:
    """Throughput is successful calls per second of the run."""
    return OpSummary(
        name=name,
        n=len(latencies_ms),
        per_second=len(latencies_ms) / seconds if seconds > 0 else 0.0,
        p50=percentile(latencies_ms, 50),
        p95=percentile(latencies_ms, 95),
        p99=percentile(latencies_ms, 99),
        max=max(latencies_ms) if latencies_ms else math.nan,
        errors=dict(errors),
    )


def format_errors(errors: dict[str, int]) -> str:
    """`0`, or `3 (timeout 2, request failed 1)` with the most frequent first."""
    total = sum(errors.values())
    if not total:
        return "0"
    parts = ", ".join(f"{kind} {n}" for kind, n in sorted(errors.items(), key=lambda e: -e[1]))
    return f"{total} ({parts})"


OP_HEADER = (
    f"{'operation':<24} {'n':>6} {'per s':>7} {'p50':>8} {'p95':>8} {'p99':>8} {'max':>8}"
    "  errors   (latencies in ms)"
)


def format_op(op: OpSummary) -> str:
    return (
        f"{op.name:<24} {op.n:>6} {op.per_second:>7.1f} {op.p50:>8.1f} {op.p95:>8.1f}"
        f" {op.p99:>8.1f} {op.max:>8.1f}  {format_errors(op.errors)}"
    )


def error_kind(exc: BaseException) -> str:
    """How a failed call is counted: timeout, request failed, or the exception's type."""
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, RequestFailed):
        return "request failed"
    return type(exc).__name__


Sample = tuple[float, dict[str, int]]
"""(seconds since the run started, {group: lag in messages})."""


def max_lag(samples: Sequence[Sample], group: str) -> int:
    return max((lags.get(group, 0) for _, lags in samples), default=0)


def drain_time(samples: Sequence[Sample], group: str, since: float) -> float | None:
    """Seconds after `since` until the group's lag reached 0 for good: the first sample at
    or after `since` that has lag 0 and only zeros after it. None if it never did."""
    after = [(t, lags.get(group, 0)) for t, lags in samples if t >= since]
    if not after or after[-1][1] > 0:
        return None
    drained = after[-1][0]
    for t, lag in reversed(after):
        if lag > 0:
            break
        drained = t
    return max(0.0, drained - since)


def format_seconds(value: float | None) -> str:
    return "not drained" if value is None else f"{value:.1f} s"


@dataclass(frozen=True, slots=True)
class StoredCheck:
    """The exactly-once comparison of the turns acknowledged with what MongoDB holds."""

    published: int
    stored: int
    duplicates: int
    missing: int
    unexpected: int
    messages_expected: int
    messages_stored: int
    turn_rows: int
    turn_row_duplicates: int

    @property
    def ok(self) -> bool:
        return (
            self.published == self.stored
            and not (self.duplicates or self.missing or self.unexpected)
            and self.messages_expected == self.messages_stored
            and self.turn_rows == self.published
            and not self.turn_row_duplicates
        )


def check_stored(
    published: dict[str, int],
    uncertain: set[str],
    transcript_turn_ids: Sequence[str],
    message_turn_ids: Sequence[str],
    row_turn_ids: Sequence[str],
) -> StoredCheck:
    """`published` maps acknowledged turn ids to their message count (user + assistant +
    tool events); `uncertain` are turns whose publish failed or timed out (they may or may
    not have landed and are left out of the comparison)."""
    ignore = set(uncertain) - set(published)
    turns = Counter(t for t in transcript_turn_ids if t not in ignore)
    rows = Counter(t for t in row_turn_ids if t not in ignore)
    stored_messages = sum(1 for t in message_turn_ids if t not in ignore)
    return StoredCheck(
        published=len(published),
        stored=len(turns),
        duplicates=sum(n - 1 for n in turns.values()),
        missing=len(set(published) - set(turns)),
        unexpected=len(set(turns) - set(published)),
        messages_expected=sum(published.values()),
        messages_stored=stored_messages,
        turn_rows=len(rows),
        turn_row_duplicates=sum(n - 1 for n in rows.values()),
    )
