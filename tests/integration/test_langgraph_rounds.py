"""How `MnemoStore`'s reads share rounds and its writes yield to them (issue 30,
`services.integrations.langgraph_rounds`, `langgraph_writes.READING_GAP`), the two costs
of LangGraph's `test_large_batches` (10 threads of synchronous calls): a thread starting a
round alone while the others wait a whole round behind it, and write requests published in
front of the rounds (the items group answers a tenant's requests one at a time). On the
real stack."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from services.integrations.langgraph import MnemoStore
from services.integrations.langgraph_writes import READING_GAP, WRITE_GAP
from services.runtime import Runtime
from services.sdk.client import MemoryClient

pytestmark = pytest.mark.integration

THREADS = 8
READS = 8


async def warm(client: MemoryClient, agent: str) -> None:
    """One reply on the fresh client, however long the first one takes (up to 60 s)."""
    assert await MnemoStore(client, agent=agent, timeout=60).aget(("warm",), "up") is None


async def test_threads_of_synchronous_reads_share_their_rounds(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    """Eight threads, eight gets each, one after the other: a round waits for the callers
    of the round before to come back, so the 64 gets take about eight rounds (a round
    that started as soon as one caller came back took about twice as many)."""
    _, client = rules_pipeline
    await warm(client, unique("0xWarm"))
    store = MnemoStore(client, agent=unique("0xRounds"), user="ro", timeout=30)
    await store.aput(("ro",), "k", {"v": 1})
    await store.aflush()
    rounds = store._rounds  # its count of rounds is what is tested
    before = rounds.rounds

    def reads() -> list[Any]:
        return [store.get(("ro",), "k") for _ in range(READS)]

    loop = asyncio.get_running_loop()
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        got = await asyncio.gather(*(loop.run_in_executor(pool, reads) for _ in range(THREADS)))

    assert all(item is not None and item.value == {"v": 1} for items in got for item in items)
    assert rounds.rounds - before <= READS * 3 // 2


async def test_write_requests_wait_longer_while_reads_run(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    """Puts every 20 ms for about two seconds while three threads read without a pause: the
    store publishes a write request at most every `READING_GAP` (not every `WRITE_GAP`),
    every put is read back meanwhile and is there once flushed."""
    _, client = rules_pipeline
    await warm(client, unique("0xWarm"))
    store = MnemoStore(client, agent=unique("0xYield"), user="yi", timeout=30)
    await store.aput(("yi",), "seed", {"v": 0})
    await store.aflush()
    lane = store._rounds.lane  # its count of write requests
    stop = threading.Event()
    missing: list[int] = []

    def reader() -> None:
        while not stop.is_set():
            assert store.get(("yi",), "seed") is not None

    def writer() -> float:
        started = time.monotonic()
        for i in range(100):
            store.put(("yi",), f"k{i}", {"i": i})
            if store.get(("yi",), f"k{i}") is None:  # read through the overlay
                missing.append(i)
            time.sleep(0.02)
        stop.set()
        return time.monotonic() - started

    before = lane.requests
    loop = asyncio.get_running_loop()
    with ThreadPoolExecutor(max_workers=4) as pool:
        readers = [loop.run_in_executor(pool, reader) for _ in range(3)]
        seconds = await loop.run_in_executor(pool, writer)
        await asyncio.gather(*readers)
    published = lane.requests - before

    assert missing == []
    assert seconds > 4 * WRITE_GAP
    assert published <= seconds / READING_GAP + 2
    await store.aflush()
    listed = await store.asearch(("yi",), limit=200)
    assert sorted(i.key for i in listed) == sorted(["seed", *(f"k{i}" for i in range(100))])
