"""Benchmark the local MiniLM embedder: load time, per-query latency, batched throughput.

    python -m benchmarks.embedder                 # from the repo root; threads 1 and 2
    python -m benchmarks.embedder --threads 1 --runs 500 --sentences 1024 --concurrency 2

Per-query latency is one text per call (the recall path). Throughput is `--sentences` texts in
batches of `--batch-size` (the ingestion path). With `--concurrency N` (N > 1), the per-query
latency is measured again while N threads call the same embedder at once, which is how a service
with several in-flight requests loads it.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from engine.adapters.local_embedder import LocalMiniLMEmbedder

_SUBJECTS = ["I", "My sister", "The team", "Our manager", "The customer", "My doctor", "We"]
_VERBS = ["moved to", "prefers", "asked about", "booked a trip to", "complained about", "likes"]
_OBJECTS = [
    "Lisbon",
    "the new pricing plan",
    "vegetarian restaurants near the office",
    "a quiet room with a view of the river",
    "the quarterly report that was due last Friday",
    "running every morning before work",
    "the delayed shipment of laptops",
    "Python type hints and strict linting",
]
_TAILS = ["", " last week", " because it is cheaper", " and wants a reply by Monday", " again"]


def sentences(count: int, seed: int = 7) -> list[str]:
    """Deterministic memory-like sentences of about 5 to 20 words."""
    rng = random.Random(seed)
    return [
        f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}{rng.choice(_TAILS)}."
        for _ in range(count)
    ]


def percentile(samples: list[float], q: float) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[int(q) - 1]


def query_latencies_ms(embedder: LocalMiniLMEmbedder, texts: list[str], runs: int) -> list[float]:
    latencies = []
    for i in range(runs):
        start = time.perf_counter()
        embedder.embed_sync([texts[i % len(texts)]])
        latencies.append((time.perf_counter() - start) * 1000)
    return latencies


def bench(threads: int, args: argparse.Namespace) -> None:
    start = time.perf_counter()
    embedder = LocalMiniLMEmbedder(threads=threads, batch_size=args.batch_size)
    load_s = time.perf_counter() - start

    queries = sentences(args.runs, seed=1)
    corpus = sentences(args.sentences, seed=2)
    embedder.embed_sync(queries[: args.warmup])  # warm-up: allocator, kernels, caches
    for text in queries[: args.warmup]:
        embedder.embed_sync([text])

    single = query_latencies_ms(embedder, queries, args.runs)

    start = time.perf_counter()
    embedder.embed_sync(corpus)
    throughput = len(corpus) / (time.perf_counter() - start)

    print(f"threads={threads}")
    print(f"  load                    {load_s * 1000:8.1f} ms")
    print(
        f"  query latency (1 text)  p50 {percentile(single, 50):6.2f} ms   "
        f"p95 {percentile(single, 95):6.2f} ms   ({args.runs} runs)"
    )
    print(
        f"  batched throughput      {throughput:8.1f} sentences/s "
        f"({len(corpus)} sentences, batches of {args.batch_size})"
    )

    if args.concurrency > 1:
        per_worker = max(args.runs // args.concurrency, 1)
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
            results = list(
                pool.map(
                    lambda _: query_latencies_ms(embedder, queries, per_worker),
                    range(args.concurrency),
                )
            )
        elapsed = time.perf_counter() - start
        loaded = [ms for worker in results for ms in worker]
        print(
            f"  query latency, {args.concurrency} callers  p50 {percentile(loaded, 50):6.2f} ms   "
            f"p95 {percentile(loaded, 95):6.2f} ms   ({len(loaded) / elapsed:.0f} queries/s total)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--runs", type=int, default=200, help="single-text calls timed")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--sentences", type=int, default=512, help="texts for throughput")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--concurrency", type=int, default=2, help="parallel callers for the loaded run (1: skip)"
    )
    args = parser.parse_args()

    print(
        f"local MiniLM embedder on {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}"
    )
    for threads in args.threads:
        bench(threads, args)


if __name__ == "__main__":
    main()
