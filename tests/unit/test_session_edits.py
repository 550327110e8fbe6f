"""Working sessions by id (reference §7.2) over the in-memory store: tenant scope, merge and
replace semantics, TTL refresh."""

from __future__ import annotations

import pytest

from engine.adapters.memory import InMemorySessionStore
from engine.errors import InputRejected, NotFound
from engine.records import ScopeFields
from engine.scoping import TenantFilter
from engine.upkeep.sessions import (
    SessionDocument,
    SessionEdit,
    get_session,
    session_scope,
    update_session,
)

SID = "session:global:0xA:t1"


def store() -> InMemorySessionStore:
    s = InMemorySessionStore()
    s.put(
        SessionDocument(
            session_id=SID,
            scope=ScopeFields("0xA", "ann", "t1", None, None),
            context=["user: hi", "assistant: hello"],
            entities={"a": 1},
            state={"lastTurnId": "x"},
            metadata={},
            created_at=1_000,
            last_accessed_at=2_000,
            expires_at=10_000,
        )
    )
    return s


def edit(**fields: object) -> SessionEdit:
    return SessionEdit(at=5_000, ttl_ms=100_000, keep=3, **fields)  # type: ignore[arg-type]


async def test_other_tenants_get_not_found_and_a_read_touches() -> None:
    s = store()
    for where in (
        TenantFilter("0xA", "bob"),
        TenantFilter("0xA", None),
        TenantFilter("0xA", None, shared=True),
        TenantFilter("0xB", "ann"),
    ):
        with pytest.raises(NotFound):
            await get_session(s, where, SID, at=3_000)
        with pytest.raises(NotFound):
            await update_session(s, where, SID, edit(context=["user: x"]))
    doc = await get_session(s, TenantFilter("0xA", "ann"), SID, at=3_000)
    assert doc.last_accessed_at == 3_000
    assert doc.json()["workingMemory"]["context"] == ["user: hi", "assistant: hello"]
    assert session_scope(doc).thread_id == "t1"


async def test_merge_keeps_the_newest_lines_and_merges_objects() -> None:
    s = store()
    where = TenantFilter("0xA", "ann")
    long_line = "user: " + "x" * 2_000
    doc = await update_session(
        s, where, SID, edit(context=["  ", long_line, "user: b"], entities={"b": 2})
    )
    assert doc.context == ["assistant: hello", long_line[:1000], "user: b"]
    assert doc.entities == {"a": 1, "b": 2}
    assert doc.state == {"lastTurnId": "x"}
    assert (doc.last_accessed_at, doc.expires_at) == (5_000, 105_000)


async def test_replace_replaces_given_parts_wholesale_without_trimming() -> None:
    s = store()
    lines = [f"user: {i}" for i in range(5)]
    doc = await update_session(
        s, TenantFilter("0xA", "ann"), SID, edit(context=lines, state={}, replace=True)
    )
    assert doc.context == lines
    assert doc.state == {}
    assert doc.entities == {"a": 1}
    assert not edit(metadata={"k": 1}).touches_working
    assert edit(state={}).touches_working


async def test_bad_input_is_rejected() -> None:
    with pytest.raises(InputRejected):
        await update_session(store(), TenantFilter("0xA", "ann"), SID, edit(context=["x"] * 101))
    with pytest.raises(InputRejected):
        await get_session(store(), TenantFilter(" ", "ann"), SID, at=1)
