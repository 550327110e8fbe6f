"""The working buffer's batch update (`engine.adapters.mongo.working._update`) sends only what
its `$slice` keeps: the server copied and dropped the rest (issue 29). That the stored buffer
is the same as consecutive appends give is checked on the server, in
`tests/contract/test_batch_stores.py`."""

from __future__ import annotations

from engine.adapters.mongo.working import _update
from engine.records import WORKING_TURN_ROWS, ScopeFields, WorkingAppend
from engine.turn_guard import TurnGuard

SCOPE = ScopeFields(agent_wallet="A", user_address="U", thread_id="T", mode=None, hai_id=None)


def append(n: int) -> WorkingAppend:
    return WorkingAppend(
        session_id="S",
        scope=SCOPE,
        turn_id=f"t{n}",
        lines=[f"user: q{n}", f"assistant: a{n}"],
        at=1_000 + n,
        expires_at=2_000 + n,
        state={"lastTurnId": f"t{n}"},
        row_id=f"row{n}",
    )


def test_a_batch_of_forty_turns_sends_the_newest_lines_and_rows_only() -> None:
    appends = [append(n) for n in range(40)]
    push = _update(appends, keep=12, guard=TurnGuard())["$push"]
    every_line = [line for a in appends for line in a.lines]
    assert push["workingMemory.context"] == {"$each": every_line[-12:], "$slice": -12}
    rows = push["workingMemory.rows"]
    assert rows["$each"] == [f"row{n}" for n in range(40 - WORKING_TURN_ROWS, 40)]
    assert rows["$slice"] == -WORKING_TURN_ROWS


def test_a_batch_shorter_than_the_buffer_sends_all_it_has() -> None:
    push = _update([append(1), append(2)], keep=12, guard=TurnGuard())["$push"]
    assert push["workingMemory.context"]["$each"] == [
        "user: q1",
        "assistant: a1",
        "user: q2",
        "assistant: a2",
    ]
    assert push["workingMemory.rows"]["$each"] == ["row1", "row2"]


def test_a_buffer_that_keeps_no_lines_is_sent_none() -> None:
    push = _update([append(1)], keep=0, guard=TurnGuard())["$push"]
    assert push["workingMemory.context"] == {"$each": [], "$slice": 0}
