"""Stalled partitions: work is waiting but the group's committed offset does not move.

A poison record that escapes every guard, a handler that hangs, or a consumer that lost its
connection all look the same from outside: the partition has lag and its committed offset
stays put. `StallWatch` turns the lag monitor's readings (`services.stream.metrics.LagMonitor`) into
`mnemostream_partition_stalled{group,topic,partition}` (1 or 0), and `/readyz` of the process
that holds such a partition answers 503 naming it (`services.stream.health.Readiness`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

Partition = tuple[str, int]
"""(topic, partition)."""


@dataclass(frozen=True, slots=True)
class Stall:
    """One stalled partition of one group: its lag and how long its offset has stood."""

    group: str
    topic: str
    partition: int
    lag: int
    seconds: float

    def describe(self) -> str:
        return (
            f"{self.group} {self.topic}[{self.partition}]: committed offset unchanged for "
            f"{self.seconds:.0f}s with {self.lag} message(s) waiting"
        )


class StallWatch:
    """Remembers, per group partition, since when its committed offset has stood while
    messages were waiting. A partition is stalled once that lasts `after_seconds`; it is
    clear again as soon as the offset moves or nothing is waiting."""

    def __init__(
        self, after_seconds: float, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if after_seconds <= 0:
            raise ValueError(f"after_seconds must be > 0, got {after_seconds}")
        self._after = after_seconds
        self._clock = clock
        self._since: dict[tuple[str, str, int], tuple[int, float, bool]] = {}
        self._stalls: dict[tuple[str, str, int], Stall] = {}

    def observe(
        self, group: str, lags: Mapping[Partition, int], committed: Mapping[Partition, int]
    ) -> dict[Partition, bool]:
        """Record one reading of `group` (lag and committed offset, -1 when none, by
        partition); returns whether each partition is stalled now."""
        now = self._clock()
        out: dict[Partition, bool] = {}
        for (topic, partition), lag in lags.items():
            key = (group, topic, partition)
            offset = committed.get((topic, partition), -1)
            seen = self._since.get(key)
            # the clock starts at the first reading that finds work waiting at this offset
            if seen is None or seen[0] != offset or not seen[2] or lag <= 0:
                seen = self._since[key] = (offset, now, lag > 0)
            stood = now - seen[1]
            stalled = lag > 0 and stood >= self._after
            out[(topic, partition)] = stalled
            if stalled:
                self._stalls[key] = Stall(group, topic, partition, lag, stood)
            else:
                self._stalls.pop(key, None)
        return out

    def stalls(self) -> list[Stall]:
        """The partitions stalled at the last reading of their group, sorted."""
        return [self._stalls[key] for key in sorted(self._stalls)]
