"""The one temporal decay formula: `0.5 ** (age_days / half_life_days)`.

Search ranks by it (`engine.retrieval.ranking.apply_decay`, and the packing recency), the
decay job stores it as a row's `decayScore` (`engine.upkeep.maintenance.decay_update`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

MS_PER_DAY = 86_400_000
DEFAULT_HALF_LIFE_DAYS = 30.0


def decay_multiplier(
    created_at_ms: int | None, now_ms: int, half_life_days: float = DEFAULT_HALF_LIFE_DAYS
) -> float:
    """`0.5 ** (age_days / half_life_days)`, in (0, 1].

    Age is clamped at 0 (a timestamp in the future does not boost). Returns 1.0 (no decay) when
    `created_at_ms` is None or the half-life is not a positive finite number. Examples with
    the default 30-day half-life: 30 d → 0.5, 60 d → 0.25, 69.66 d → ≈0.2, 90 d → 0.125.
    """
    if created_at_ms is None or not math.isfinite(half_life_days) or half_life_days <= 0:
        return 1.0
    age_days = max(0, now_ms - created_at_ms) / MS_PER_DAY
    return float(0.5 ** (age_days / half_life_days))


def recency_anchor(created_at_ms: Iterable[int | None], now_ms: int) -> int:
    """The "now" that recency and decay are measured from: the newest of the given event
    times, never later than `now_ms` (the clock, or a request's `asOf`). Measured against the
    wall clock, an imported or replayed history years old decays every score to about zero
    and its shape is lost; against its own newest event it keeps that shape (issue 16).
    `now_ms` when no time is given."""
    newest = max((t for t in created_at_ms if t), default=None)
    return now_ms if newest is None else min(now_ms, newest)
