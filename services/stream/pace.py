"""How much of a batch fits its time budget: `Pace` measures the seconds one unit of work
takes (a record, or a text for the `embeddings` group) over every slice a consumer ran, and
sizes the next slice from that, so a batch's work ends near `budget_seconds` whatever the
speed of what it calls (a model ten times slower makes slices ten times smaller, at once).

Plain arithmetic on measured seconds: no clock is read here, the caller passes elapsed time.
"""

from __future__ import annotations

from dataclasses import dataclass

PROBE_SHARE = 8
"""The first slice a consumer runs, before it has measured anything, holds 1/PROBE_SHARE of
the most units a batch takes."""
PROBE_UNITS = 32
"""... or this many units when a batch takes any number."""
SLICE_SHARE = 4
"""A slice is planned to take at most 1/SLICE_SHARE of the budget: a model that suddenly
slows down overruns the budget by a fraction of it, not by a whole budget."""
SPEEDUP_WEIGHT = 0.3
"""A faster slice moves the estimate this far towards it (a slower one moves it all the way:
slices shrink at once when the work slows down, and grow back over a few slices)."""
MIN_SECONDS = 1e-6
"""A slice is never measured as faster than this (a coarse clock may read 0)."""


@dataclass(slots=True)
class Pace:
    """Seconds per unit of work, measured, and the slices they allow.

    `budget_seconds`: how long one batch's work may run before the rest of the batch is
    handed back to the next poll (> 0)."""

    budget_seconds: float
    probe_units: int = PROBE_UNITS
    """Units of the first slice, before anything was measured."""
    per_unit: float | None = None
    """Estimated seconds per unit; None until a slice has been measured."""

    def plan(self, elapsed: float) -> int | None:
        """Units the next slice of a batch may hold, `elapsed` seconds into the batch's work;
        None when the budget is spent (the rest of the batch goes back). At least 1: a slice
        holds at least one record, however heavy."""
        remaining = self.budget_seconds - elapsed
        if remaining <= 0:
            return None
        if self.per_unit is None:
            return self.probe_units
        allowed = min(remaining, self.budget_seconds / SLICE_SHARE)
        return max(1, int(allowed / self.per_unit))

    def measured(self, units: int, seconds: float) -> None:
        """A slice of `units` units took `seconds`."""
        if units <= 0:
            return
        sample = max(seconds, MIN_SECONDS) / units
        if self.per_unit is None or sample >= self.per_unit:
            self.per_unit = sample
        else:
            self.per_unit += SPEEDUP_WEIGHT * (sample - self.per_unit)


def probe_units(max_units: int | None) -> int:
    """Units of a consumer's first slice when a batch takes at most `max_units`."""
    return PROBE_UNITS if max_units is None else max(1, max_units // PROBE_SHARE)
