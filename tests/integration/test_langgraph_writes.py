"""`MnemoStore`'s puts and deletes acknowledged once the broker has them (issue 30,
`services.integrations.langgraph_writes`): the store's next read sees them because it is
answered after them in the log, a write the items group did not apply is raised by the
store's next call, and `aflush` waits until they are applied (for pre_turn). On the real
stack. Each test first waits for one reply on its fresh client (`warm`): the first request
of a client may wait for the groups to join and for its reply reader's first records (the
SDK restarts a reader that delivered nothing for 16 s); these tests are about what follows."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from services.integrations.langgraph import MnemoStore
from services.integrations.langgraph_writes import WRITE_GAP
from services.runtime import Runtime
from services.sdk.client import MemoryClient
from services.sdk.transport import RequestFailed

pytestmark = pytest.mark.integration


async def warm(client: MemoryClient, agent: str) -> None:
    """One reply on the fresh client, however long the first one takes (up to 60 s)."""
    assert await MnemoStore(client, agent=agent, timeout=60).aget(("warm",), "up") is None


async def test_every_read_after_an_acknowledged_write_sees_it_without_a_flush(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    """Put, read, delete, read, listing and search, one after the other: each read is
    answered after the write before it (same tenant, same partition, in order), so it sees
    that write, a delete as absence."""
    _, client = rules_pipeline
    store = MnemoStore(client, agent=unique("0xBehind"), user="wb", timeout=30, write_timeout=60)
    assert client.reader_stats.replies == 0  # a fresh client: its first put waits for its reply
    await store.aput(("wb", "first"), "k", {"n": "first"})
    assert client.reader_stats.replies == 1
    for n in range(6):
        await store.aput(("wb", str(n % 2)), "k", {"n": n})
        got = await store.aget(("wb", str(n % 2)), "k")
        assert got is not None
        assert got.value == {"n": n}
        assert [i.value for i in await store.asearch(("wb", str(n % 2)))] == [{"n": n}]
        await store.adelete(("wb", str(n % 2)), "k")
        assert await store.aget(("wb", str(n % 2)), "k") is None
        assert await store.alist_namespaces(prefix=("wb", str(n % 2))) == []
    # another store of the tenant (another instance, same client) reads them in order too
    await store.aput(("wb", "shared"), "k", {"n": "last"})
    other = MnemoStore(client, agent=store.scope.agent_wallet, user="wb")
    seen = await other.aget(("wb", "shared"), "k")
    assert seen is not None
    assert seen.value == {"n": "last"}


async def test_writes_from_threads_are_read_back_by_each_thread(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    """Synchronous puts and deletes from several threads at once (what LangGraph's
    `test_large_batches` does): each thread reads its own last write of its own key."""
    _, client = rules_pipeline
    store = MnemoStore(client, agent=unique("0xThreads"), user="th", timeout=30)
    await warm(client, store.scope.agent_wallet)
    failures: list[str] = []

    def work(t: int) -> None:
        try:
            for n in range(5):
                store.put(("th",), f"k{t}", {"t": t, "n": n})
                got = store.get(("th",), f"k{t}")
                if got is None or got.value != {"t": t, "n": n}:
                    failures.append(f"thread {t}, put {n}: read {got}")
                store.delete(("th",), f"k{t}")
                if store.get(("th",), f"k{t}") is not None:
                    failures.append(f"thread {t}, delete {n}: still there")
        except Exception as exc:  # noqa: BLE001 - reported below
            failures.append(f"thread {t}: {exc!r}")

    # the client's loop is this test's: the threads' synchronous calls wait for it. Threads
    # of their own: the loop's default executor is the groups' too (the embedder runs there)
    loop = asyncio.get_running_loop()
    with ThreadPoolExecutor(max_workers=6) as pool:
        await asyncio.gather(*(loop.run_in_executor(pool, work, t) for t in range(6)))
    assert failures == []
    assert await store.asearch(("th",)) == []


async def test_a_write_not_applied_is_raised_by_the_next_call_once(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    """A write whose deadline passes before the items group reads it is not applied (the
    group answers that it expired); the put returned already, so `aflush` and the next call
    raise it, once, and the item is not there."""
    _, client = rules_pipeline
    agent = unique("0xLate")
    await warm(client, agent)
    store = MnemoStore(client, agent=agent, user="la", timeout=30)
    late = MnemoStore(client, agent=agent, user="la", timeout=30, write_timeout=0.001)

    await late.aput(("late",), "k", {"n": 1})  # in the log: acknowledged

    with pytest.raises(RequestFailed, match="not applied"):
        await late.aflush()
    assert await late.aget(("late",), "k") is None  # raised once; this call runs
    await late.aput(("late",), "k2", {"n": 2})  # buffered: published within WRITE_GAP
    await asyncio.sleep(WRITE_GAP + 0.5)  # published, its 1 ms deadline passed: recorded
    with pytest.raises(RequestFailed, match="not applied"):
        await late.aget(("late",), "k2")
    assert await store.aget(("late",), "k") is None
    assert await store.aget(("late",), "k2") is None


async def test_after_aflush_pre_turn_recalls_the_put(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    """pre_turn reads through the search group, not the items topic: `aflush` returns once
    the items group applied the store's writes, so the next pre_turn recalls them."""
    _, client = rules_pipeline
    agent = unique("0xFlush")
    await warm(client, agent)
    store = MnemoStore(client, agent=agent, user="fl", index_fields=["text"], timeout=30)
    await store.aput(("facts",), "diet", {"text": "Flora never eats shellfish."})

    await store.aflush()

    reply = await client.context(
        "What must Flora never eat?", {"agentWallet": agent, "userAddress": "fl"}
    )
    assert "shellfish" in (reply.prompt or "")


async def test_a_buffered_write_reads_the_same_before_and_after_it_is_applied(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    """A put that comes right after another is buffered (`WRITE_GAP`): read through the
    overlay it is the item, with the creation time the items group gives it once applied
    (the write request's record time), and a buffered delete reads as absent."""
    _, client = rules_pipeline
    agent = unique("0xOverlay")
    await warm(client, agent)
    store = MnemoStore(client, agent=agent, user="ov", timeout=30)
    await store.aput(("ov",), "first", {"n": 0})  # published: the next put is buffered
    await store.aput(("ov",), "k", {"n": 1})
    assert store._rounds.lane.snapshot().writes  # still buffered
    before = await store.aget(("ov",), "k")
    listed = await store.asearch(("ov",))
    await store.aflush()
    after = await store.aget(("ov",), "k")
    assert before is not None
    assert after is not None
    assert (before.value, before.created_at) == (after.value, after.created_at)
    assert [(i.key, i.created_at) for i in listed if i.key == "k"] == [("k", after.created_at)]

    await store.aput(("ov",), "k", {"n": 2})  # an update keeps the creation time
    await store.adelete(("ov",), "first")
    updated = await store.aget(("ov",), "k")
    assert updated is not None
    assert (updated.value, updated.created_at) == ({"n": 2}, after.created_at)
    assert await store.aget(("ov",), "first") is None
    await store.aflush()
    assert await store.aget(("ov",), "first") is None


async def test_closing_the_client_publishes_the_writes_it_acknowledged_early(
    rules_pipeline: tuple[Runtime, MemoryClient], stack: Any, unique: Any
) -> None:
    """A put acknowledged while it was still buffered (`WRITE_GAP`) is published when its
    client closes (`ClosingHooks`): the log has it, and the items group applies it, though
    nobody called `aflush`. Without the hook it was lost with the client."""
    _, reading = rules_pipeline
    agent = unique("0xClosing")
    async with MemoryClient(
        stack.kafka_bootstrap, timeout=60, group_prefix=reading.group_prefix
    ) as client:
        await warm(client, agent)
        store = MnemoStore(client, agent=agent, user="cl", timeout=30)
        await store.aput(("cl",), "first", {"n": 0})  # published: the next put is buffered
        await store.aput(("cl",), "late", {"n": 1})
        assert store._rounds.lane.snapshot().writes  # acknowledged, not published yet
    other = MnemoStore(reading, agent=agent, user="cl", timeout=30)
    for _ in range(100):  # applied by the group once it reads the request closing published
        found = await other.aget(("cl",), "late")
        if found is not None:
            break
        await asyncio.sleep(0.2)
    assert found is not None
    assert found.value == {"n": 1}
