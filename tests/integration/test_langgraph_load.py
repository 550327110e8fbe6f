"""`MnemoStore` under LangGraph's large-batch load, scaled down to run in seconds (issue 30):
LangGraph's own `test_large_batches` tests send thousands of concurrent puts, gets,
listings, searches and deletes of the same keys, from an event loop and from threads, and
expect every call to return. On the real stack."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langgraph.store.base import PutOp

from services.integrations.langgraph import MnemoStore
from services.runtime import Runtime
from services.sdk.client import MemoryClient

pytestmark = pytest.mark.integration

KEYS = 8
REPEATS = 6


async def test_concurrent_puts_and_deletes_of_the_same_keys_across_many_batches_converge(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    """Every call returns (a put raced by a delete of its key used to wait for its row until
    `write_timeout` and raise), the reads agree once the calls are done, a batch's last write
    of a key is what every read sees, and nothing shows in another tenant."""
    _, client = rules_pipeline
    agent = unique("0xLoad")
    store = MnemoStore(client, agent=agent, user="lu", write_timeout=20)
    calls = []
    for m in range(REPEATS):
        space = ("load", str(m % 2))
        for i in range(KEYS):
            calls += [
                store.aput(space, f"k{i}", {"n": i, "m": m}),
                store.aget(space, f"k{i}"),
                store.alist_namespaces(max_depth=m + 1),
                store.asearch(("load",)),
                store.aput(space, f"k{i}", {"n": i, "m": m}),
                store.adelete(space, f"k{i}"),
            ]
    loop = asyncio.get_running_loop()
    with ThreadPoolExecutor(max_workers=4) as pool:  # the synchronous API at the same time
        threaded = [
            loop.run_in_executor(pool, call, ("load", "t"), f"k{i % KEYS}", *value)
            for i in range(4 * KEYS)
            for call, value in ((store.put, ({"n": i},)), (store.delete, ()))
        ]
        results = await asyncio.gather(*calls, *threaded, return_exceptions=True)

    assert [r for r in results if isinstance(r, BaseException)] == []

    spaces = [("load", "0"), ("load", "1"), ("load", "t")]
    listed = {(i.namespace, i.key): i.value for i in await store.asearch(("load",), limit=100)}
    for space in spaces:  # converged: a get and the listing agree on every key
        for i in range(KEYS):
            got = await store.aget(space, f"k{i}")
            assert (got is None) == ((space, f"k{i}") not in listed)
            assert got is None or got.value == listed[(space, f"k{i}")]

    # one batch per key, run concurrently: its writes in order, the last one wins
    batches = [
        [PutOp(space, f"k{i}", {"v": 1}), PutOp(space, f"k{i}", None)]
        + ([PutOp(space, f"k{i}", {"v": "last", "i": i})] if i % 2 == 0 else [])
        for space in spaces
        for i in range(KEYS)
    ]
    await asyncio.gather(*(store.abatch(ops) for ops in batches))

    expected = {
        (space, f"k{i}"): {"v": "last", "i": i} for space in spaces for i in range(0, KEYS, 2)
    }
    for space in spaces:
        for i in range(KEYS):
            got = await store.aget(space, f"k{i}")
            assert (None if got is None else got.value) == expected.get((space, f"k{i}"))
    listed = {(i.namespace, i.key): i.value for i in await store.asearch(("load",), limit=100)}
    assert listed == expected
    assert sorted(await store.alist_namespaces(prefix=("load",))) == spaces

    other = MnemoStore(client, agent=agent, user="someone-else")
    assert await other.asearch(("load",)) == []
    assert await other.aget(("load", "0"), "k0") is None
