"""The one temporal decay formula: `0.5 ** (age_days / half_life_days)`.

Search ranks by it (`engine.retrieval.ranking.apply_decay`, and the packing recency), the
decay job stores it as a row's `decayScore` (`engine.upkeep.maintenance.decay_update`).
"""

from __future__ import annotations

import math

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
