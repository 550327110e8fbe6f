"""Forgetting a user (`engine.upkeep.erasure`), one suite over the runtime's stores in memory
and on the MongoDB-wire server: every record of the user goes from every store, whatever
its thread, and nothing of the agent's own, another user's or another agent's does."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import numpy as np
import pytest

from engine.errors import InputRejected
from engine.history import change
from engine.ingest.patterns import PatternSeed
from engine.ingest.skills import Skill, skill_id
from engine.records import (
    ArchiveRecord,
    Cause,
    MemoryRow,
    RelationRecord,
    ScopeFields,
    StoredMessage,
    TranscriptAppend,
    WorkingAppend,
)
from engine.scoping import TenantFilter
from engine.upkeep.erasure import ERASED_KINDS, forget_user
from services.runtime import Stores, open_runtime
from services.runtime.memory import memory_stores
from tests.support.settings import make_settings

T0 = 1_600_000_000_000
DAY = 86_400_000
AGENT, USER = "0xAgentE", "0xUserE"
ALICE_T1 = ScopeFields(AGENT, USER, "t1", "global", None)
ALICE_T2 = ScopeFields(AGENT, USER, "t2", "local", "hai-1")
BOB = ScopeFields(AGENT, "0xBob", "t1", None, None)
AGENT_ROWS = ScopeFields(AGENT, None, None, None, None)
OTHER_AGENT = ScopeFields("0xOtherAgent", USER, "t1", None, None)
KEPT = (BOB, AGENT_ROWS, OTHER_AGENT)
CAUSE = Cause("request", "req-1", "item.update", "tester")

IMPLEMENTATIONS = [
    pytest.param("memory", id="memory"),
    pytest.param("mongo", id="mongo", marks=pytest.mark.integration),
]


@pytest.fixture(params=IMPLEMENTATIONS)
async def stores(
    request: pytest.FixtureRequest, unique: Callable[[str], str]
) -> AsyncIterator[Stores]:
    if request.param == "memory":
        yield memory_stores()
        return
    stack = request.getfixturevalue("stack")
    settings = make_settings(stack, unique("erasure"))
    async with open_runtime(settings, needs=()) as rt:
        try:
            yield rt.stores
        finally:
            await rt.mongo.drop_database(settings.mongo.db)


def _key(scope: ScopeFields) -> str:
    return f"{scope.agent_wallet}-{scope.user_address}-{scope.thread_id}"


async def seed(stores: Stores, scope: ScopeFields) -> None:
    """One record of `scope` in every store."""
    key = _key(scope)
    vector = np.ones(8, dtype=np.float32) / np.sqrt(8)
    for source in ("fact", "session", "knowledge"):
        row = MemoryRow(f"{source}-{key}", scope, f"{source} of {key}", vector, "m", source, T0)
        assert await stores.memory.insert_if_absent(row)
    message = StoredMessage(role="user", content=f"hello from {key}", timestamp=T0)
    await stores.transcripts.append(
        TranscriptAppend(
            session_id=f"s-{key}",
            scope=scope,
            turn_id=f"turn-{key}",
            messages=[message],
            summary=None,
            token_count=3,
            at=T0,
        )
    )
    await stores.working.append(
        WorkingAppend(
            session_id=f"s-{key}",
            scope=scope,
            turn_id=f"turn-{key}",
            lines=[f"user: hello from {key}"],
            at=T0,
            expires_at=T0 + 30 * DAY,
            state={},
        ),
        keep=12,
    )
    await stores.relations.insert_if_absent(
        RelationRecord(f"rel-{key}", scope, "e1", "Dana", "MANAGER_OF", "e2", "user", T0)
    )
    seeded = PatternSeed.of(scope, ("search_flights", "book_ticket"))
    await stores.patterns.record_execution(seeded, turn_id=f"turn-{key}", succeeded=True, at=T0)
    await stores.archives.insert_if_absent(
        ArchiveRecord(f"arch-{key}", scope, f"archive of {key}", ["travel"], 3, T0, T0, T0)
    )
    await stores.history.record(
        [
            change(
                f"fact-{key}",
                scope,
                "updated",
                CAUSE,
                T0,
                old=f"old words of {key}",
                new=f"new words of {key}",
                details={"reason": f"because {key} said so"},
            )
        ]
    )
    await stores.skills.promote(
        Skill(
            skill_id(seeded.pattern_id),
            seeded.pattern_id,
            seeded.scope,
            f"skill of {key}",
            "books flights",
            seeded.steps,
            1.0,
            1.0,
            T0,
        )
    )


async def holdings(stores: Stores, scope: ScopeFields) -> dict[str, int]:
    """What the stores' own reads find of exactly this tenant (its thread included)."""
    where = TenantFilter(
        scope.agent_wallet, scope.user_address, scope.mode, scope.hai_id, scope.thread_id
    )
    durable = TenantFilter(scope.agent_wallet, scope.user_address, scope.mode, scope.hai_id)
    rows = await stores.memory.active_rows(durable, sources=("fact", "session", "knowledge"))
    return {
        "memory": len(rows),
        "transcripts": len(await stores.transcripts.recent(where, 50)),
        "working": len(await stores.working.recent(where, 50)),
        "relations": len(await stores.relations.around(durable, ["e1"])),
        "patterns": len(await stores.pattern_layer.active(durable, 50)),
        "archives": len(await stores.archives.active(durable, 50)),
        "skills": len(await stores.skills.list(durable, 50)),
        "history": sum(
            1
            for c in await stores.history.of_item(durable, f"fact-{_key(scope)}", 50)
            if c.old_content or c.new_content or c.details.get("reason")
        ),
    }


EVERY_KIND = {
    "memory": 3,
    "transcripts": 1,
    "working": 1,
    "relations": 1,
    "patterns": 1,
    "archives": 1,
    "skills": 1,
    "history": 1,
}


async def test_forgetting_a_user_erases_every_store_and_keeps_every_other_tenant(
    stores: Stores,
) -> None:
    for scope in (ALICE_T1, ALICE_T2, *KEPT):
        await seed(stores, scope)
    for scope in (ALICE_T1, *KEPT):
        assert await holdings(stores, scope) == EVERY_KIND

    # the filter's thread and widening do not narrow or widen what goes: the whole user
    where = TenantFilter(AGENT, USER, thread_id="t1", shared=True)
    erased = await forget_user(stores.eraser, where)

    assert list(erased) == list(ERASED_KINDS)
    # two threads of the user: two of each, but one pattern and one skill (patterns and
    # skills are per user, not per thread; ALICE_T2's mode and hai make them distinct)
    assert erased == {
        "memory": 6,
        "transcripts": 2,
        "working": 2,
        "relations": 2,
        "patterns": 2,
        "archives": 2,
        "skills": 2,
        "history": 2,
        "keys": 0,  # no sealed events here: no key to shred
    }
    for scope in (ALICE_T1, ALICE_T2):
        assert set((await holdings(stores, scope)).values()) == {0}
        # issue 31: the user's history says what happened, no longer what was said
        durable = TenantFilter(AGENT, USER, scope.mode, scope.hai_id)
        [kept] = await stores.history.of_item(durable, f"fact-{_key(scope)}", 50)
        assert (kept.kind, kept.at, kept.old_content, kept.new_content) == (
            "updated",
            T0,
            None,
            None,
        )
        assert kept.details == {"forgotten": True}
    for scope in KEPT:
        assert await holdings(stores, scope) == EVERY_KIND
    # erasing again finds nothing
    again = await forget_user(stores.eraser, TenantFilter(AGENT, USER))
    assert set(again.values()) == {0}


async def test_forgetting_needs_a_user_and_an_agent(stores: Stores) -> None:
    await seed(stores, AGENT_ROWS)
    with pytest.raises(InputRejected, match="needs a userAddress"):
        await forget_user(stores.eraser, TenantFilter(AGENT, None, shared=True))
    with pytest.raises(InputRejected, match="agentWallet is required"):
        await forget_user(stores.eraser, TenantFilter(" ", USER))
    assert await holdings(stores, AGENT_ROWS) == EVERY_KIND
