"""`benchmarks.call_stops` (issue 33): a body's path from the SDK to the publish validates it
once, by its model; the contracts are made from the model, not validated again."""

from __future__ import annotations

import pytest

from benchmarks.call_stops import OPERATIONS, trace

SECOND_PASS = ("schemas.bounds.parse_contract", "schemas.scope.Scope.parse")
"""What validated a body a second time before issue 33 (the contracts and the scope)."""


@pytest.mark.parametrize("name", ["record_turn", "record_turn_tools", "remember"])
def test_a_write_is_validated_once(name: str) -> None:
    chain = trace(OPERATIONS[name])
    assert next(iter(chain)).endswith(f"MemoryClient.{name.removesuffix('_tools')}")
    assert list(chain)[-1] == "services.sdk.transport.Transport.publish"
    assert not [stop for stop in chain if stop in SECOND_PASS], chain
    assert "schemas.bodies.Body._loose" in chain  # the one alias step, read with the model
    assert not chain["schemas.bodies.Body._loose"]  # a validator: not a stop


def test_the_turn_s_stops() -> None:
    chain = trace(OPERATIONS["record_turn"])
    stops = [stop.rsplit(".", 1)[-1] for stop, followed in chain.items() if followed]
    assert stops == [
        "record_turn",
        "recorded",
        "scope",
        "event_time",
        "message",
        "thread_session_id",
        "h32",
        "publish",  # the size check is the publish's (the event is serialised once)
    ]
    assert len(stops) <= 8  # issue 33's goal
