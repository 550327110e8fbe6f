"""`Pace`: a batch's slices from the measured seconds per unit (issue 29)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from services.settings import Settings
from services.stream.pace import Pace, probe_units


def test_the_first_slice_is_a_probe_and_a_spent_budget_plans_none() -> None:
    pace = Pace(budget_seconds=8.0, probe_units=probe_units(400))
    assert pace.plan(0.0) == 50
    pace.measured(50, 1.0)  # 20 ms a unit
    assert pace.plan(1.0) == 100  # a quarter of the budget: 2 s
    assert pace.plan(7.5) == 25  # what is left: 0.5 s
    assert pace.plan(8.0) is None
    assert pace.plan(30.0) is None


def test_a_slowdown_is_believed_at_once_and_a_speedup_gradually() -> None:
    pace = Pace(budget_seconds=8.0)
    pace.measured(10, 1.0)
    pace.measured(10, 10.0)
    assert pace.per_unit == pytest.approx(1.0)
    pace.measured(10, 1.0)
    assert pace.per_unit == pytest.approx(0.73)
    assert pace.plan(0.0) == 2  # 2 s at 0.73 s a unit, at least one
    pace.measured(1, 100.0)
    assert pace.plan(0.0) == 1


def test_a_batch_budget_must_fit_well_inside_the_poll_interval() -> None:
    Settings(max_poll_interval_ms=8_000, batch_budget_ms=2_000, outage_wait_seconds=5)
    with pytest.raises(ValidationError, match="MNEMOSTREAM_BATCH_BUDGET_MS"):
        Settings(max_poll_interval_ms=8_000, batch_budget_ms=2_001, outage_wait_seconds=1)
    with pytest.raises(ValidationError, match="MNEMOSTREAM_OUTAGE_WAIT_SECONDS"):
        Settings(max_poll_interval_ms=8_000, batch_budget_ms=2_000, outage_wait_seconds=6)
    with pytest.raises(ValidationError, match="MNEMOSTREAM_OUTAGE_WAIT_SECONDS"):
        Settings(max_poll_interval_ms=100_000)  # the default outage wait is 120 s
