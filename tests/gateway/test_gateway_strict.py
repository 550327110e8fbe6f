"""Strict inputs (issue 13, part 3), table-driven over real HTTP: every hostile number or
time of `tests.gateway.hostile_table` (negative counts, budgets below 1, NaN/Infinity
literals, times outside 1970..9999, negative token counts, job parameters out of range) is a
422 whose one-line message names the field, never clamped or ignored; the valid neighbour
value of each is still accepted (the positive control).

`test_hostile_input_census` sends the whole table and prints the figures (run it with `-s`):
tried, clear 422 errors, silent accepts."""

from __future__ import annotations

import pytest

from tests.gateway.conftest import Gateway, agent
from tests.gateway.hostile_table import Case, cases, send, tally, verdict

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="package")]

CASES = cases()


@pytest.mark.parametrize("case", CASES, ids=[c.label for c in CASES])
async def test_a_hostile_value_is_422_naming_the_field(gw: Gateway, case: Case) -> None:
    r = await send(gw.http, case, agent(), hostile=True)
    assert r.status_code == 422, r.text
    message = r.json()["error"]
    assert case.field in message, message
    assert "\n" not in message


@pytest.mark.parametrize("case", CASES, ids=[c.label for c in CASES])
async def test_the_valid_neighbour_is_accepted(gw: Gateway, case: Case) -> None:
    r = await send(gw.http, case, agent(), hostile=False)
    assert r.status_code in case.ok, r.text


async def test_hostile_input_census(gw: Gateway) -> None:
    verdicts = [(c, verdict(c, await send(gw.http, c, agent(), hostile=True))) for c in CASES]
    report = tally(verdicts)
    print("\n" + report)
    silent = [c.label for c, v in verdicts if v == "silent"]
    assert not silent, report + "\nsilent accepts:\n" + "\n".join(silent)
    assert all(v == "clear" for _, v in verdicts), report
