"""LangGraph's large-batch load on `MnemoStore` (issue 30): the call pattern of LangGraph's
own `test_large_batches_async` (for each of `M` repeats and `N` keys: put, get, list
namespaces, search, put again, delete; all concurrent), on a live local stack, timed.

    python -m benchmarks.upstream_langgraph_load                # N=1000, M=10: 60,000 calls
    python -m benchmarks.upstream_langgraph_load -n 100 --json
    python -m benchmarks.upstream_langgraph_load -n 100 --threads 10   # test_large_batches

Prints the calls, the seconds they took, the rate, the errors (LangGraph's test expects none
and its per-test timeout in `benchmarks.upstream_langgraph` is 120 s), the store's rounds of
reads and write requests, and with `--json` one JSON object. The stack is started here (or
named by MNEMOSTREAM_KAFKA_BOOTSTRAP, _MONGO_URI, _REDIS_URL) with every consumer group in a
child process; the store's client runs on a loop thread of its own, the calls come from
another loop, as in LangGraph's test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from benchmarks.upstream_support import WARM_UP_SECONDS, live_stack, start_client, stop_client
from services.integrations.langgraph import MnemoStore
from services.integrations.loops import LoopThread
from services.sdk.client import MemoryClient


async def load(store: MnemoStore, n: int, m: int) -> tuple[int, float, list[str]]:
    """LangGraph's call pattern, all at once: (calls, seconds, the errors' texts)."""
    calls = []
    for repeat in range(m):
        space = ("test", "foo", "bar", "baz", str(repeat % 2))
        for i in range(n):
            calls += [
                store.aput(space, f"key{i}", value={"foo": f"bar{i}"}),
                store.aget(space, f"key{i}"),
                store.alist_namespaces(prefix=None, max_depth=repeat + 1),
                store.asearch(("test",)),
                store.aput(space, f"key{i}", value={"foo": f"bar{i}"}),
                store.adelete(space, f"key{i}"),
            ]
    started = time.perf_counter()
    results = await asyncio.gather(*calls, return_exceptions=True)
    seconds = time.perf_counter() - started
    return len(calls), seconds, [repr(r) for r in results if isinstance(r, BaseException)]


def threaded(store: MnemoStore, n: int, m: int, threads: int) -> tuple[int, float, list[str]]:
    """LangGraph's `test_large_batches`: the same calls, synchronous, from `threads` threads."""
    calls: list[tuple[Any, tuple[Any, ...], dict[str, Any]]] = []
    for repeat in range(m):
        space = ("test", "foo", "bar", "baz", str(repeat % 2))
        for i in range(n):
            calls += [
                (store.put, (space, f"key{i}"), {"value": {"foo": f"bar{i}"}}),
                (store.get, (space, f"key{i}"), {}),
                (store.list_namespaces, (), {"prefix": None, "max_depth": repeat + 1}),
                (store.search, (("test",),), {}),
                (store.put, (space, f"key{i}"), {"value": {"foo": f"bar{i}"}}),
                (store.put, (space, f"key{i}", None), {}),
            ]
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        futures = [pool.submit(call, *a, **kw) for call, a, kw in calls]
        errors = [repr(f.exception()) for f in futures if f.exception() is not None]
    return len(calls), time.perf_counter() - started, errors


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("-n", type=int, default=1000, help="keys (LangGraph's N)")
    parser.add_argument("-m", type=int, default=10, help="repeats (LangGraph's M)")
    parser.add_argument(
        "--threads", type=int, default=0, help="synchronous calls from this many threads"
    )
    parser.add_argument("--json", action="store_true", help="also print one JSON object")
    args = parser.parse_args()
    state: dict[str, Any] = {}

    def warm_up(thread: LoopThread, client: MemoryClient) -> None:
        warm = MnemoStore(
            client, agent=f"0xWarm{uuid.uuid4().hex[:8]}", write_timeout=WARM_UP_SECONDS
        )
        warm.put(("warm",), "up", {"text": "warm up"})
        warm.flush()  # applied: the first reply of the client came (a put returns before it)

    with live_stack() as env:
        os.environ.update(env)
        client = start_client(state, warm_up)
        try:
            store = MnemoStore(client, agent=f"0xLoad{uuid.uuid4().hex[:8]}", user="load")
            if args.threads:
                calls, seconds, errors = threaded(store, args.n, args.m, args.threads)
            else:
                calls, seconds, errors = asyncio.run(load(store, args.n, args.m))
        finally:
            stop_client(state)
    rounds, requests = store._rounds.rounds, store._rounds.lane.requests  # the store's counts
    print(
        f"{calls} calls (N={args.n}, M={args.m}) in {seconds:.1f} s: "
        f"{calls / seconds:.0f} calls/s, {len(errors)} errors; "
        f"{rounds} rounds of reads, {requests} write requests"
    )
    for error in errors[:5]:
        print(f"  {error[:300]}")
    if args.json:
        figures = {"calls": calls, "seconds": round(seconds, 2), "errors": len(errors)}
        figures |= {"threads": args.threads, "rounds": rounds, "write_requests": requests}
        print(json.dumps({"benchmark": "upstream_langgraph_load", **figures}))


if __name__ == "__main__":
    main()
