"""The turn that said a replaced fact is shown as outdated (issue 17 §2), derived when read
from the facts' own validity: the same whichever of a turn and its facts was stored first,
so a replay rebuilds the same rows (a mark written on the turn row when the fact was
replaced was missing when the facts were replayed before their turns)."""

from __future__ import annotations

import numpy as np

from engine.adapters.memory import InMemoryMemoryStore
from engine.records import MemoryRow, ScopeFields, outdated_since, outdated_turns, turn_row_id
from engine.retrieval.vector_index import ExactVectorIndex
from engine.scoping import TenantFilter

SCOPE = ScopeFields("0xA", "ana", "t1", None, None)
VEC = np.ones(8, dtype=np.float32) / np.sqrt(8)


def fact(vid: str, turn: str, invalid_at: int | None, at: int = 1_000) -> MemoryRow:
    return MemoryRow(
        vid,
        SCOPE,
        f"fact {vid}",
        VEC,
        "m",
        "fact",
        at,
        {
            "sourceTurnId": turn,
            "sourceSessionId": "s1",
            "status": "superseded" if invalid_at else "active",
        },
        invalid_at=invalid_at,
    )


def turn(turn_id: str) -> MemoryRow:
    return MemoryRow(
        turn_row_id("0xA", "s1", turn_id),
        SCOPE,
        f"user: {turn_id}",
        VEC,
        "m",
        "session",
        500,
        {},
    )


def test_a_turn_is_outdated_from_its_first_replaced_fact() -> None:
    rows = [fact("f1", "t-old", 5_000), fact("f2", "t-old", 3_000), fact("f3", "t-new", None)]
    assert outdated_turns(rows) == {turn_row_id("0xA", "s1", "t-old"): 3_000}


async def test_the_index_marks_the_turn_row_whichever_was_stored_first() -> None:
    for order in ("turn first", "facts first"):
        store = InMemoryMemoryStore()
        rows = [turn("t-old"), fact("f1", "t-old", 4_000), turn("t-new"), fact("f2", "t-new", None)]
        for row in rows if order == "turn first" else rows[::-1]:
            await store.insert_if_absent(row)
        found = await ExactVectorIndex(store).search(
            TenantFilter("0xA", "ana"), VEC, model="m", k=10, sources=["session"]
        )
        marks = {row.vector_id: outdated_since(row.metadata) for row, _ in found}
        assert marks == {
            turn_row_id("0xA", "s1", "t-old"): 4_000,
            turn_row_id("0xA", "s1", "t-new"): None,
        }, order
