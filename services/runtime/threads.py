"""Process-wide thread pools of native libraries, set once by the composition root.

NumPy's BLAS (OpenBLAS in the wheels) splits a matrix-vector product of the exact vector index
over every core, then keeps its helper threads spinning for a while after each product in case
another follows. In a service whose concurrency comes from asyncio and from more processes, that
spin takes a core from the handlers: profiled on 2 cores, the search process used 118% CPU at
10k memories (one helper thread at ~64%), and the over-Kafka cache-miss p95 of pre_turn was
42–46 ms with the library's own pool against 24–31 ms with one thread (docs/benchmarks.md,
retrieval).
"""

from __future__ import annotations

import numpy  # noqa: F401  (loads the BLAS library before its pool is sized)
from threadpoolctl import threadpool_info, threadpool_limits


def limit_blas_threads(threads: int) -> None:
    """Size every loaded BLAS library's pool to `threads` (0: leave the library's default).
    Idempotent; lasts for the process."""
    if threads <= 0:
        return
    threadpool_limits(limits=threads, user_api="blas")


def blas_threads() -> list[int]:
    """The pool size of each loaded BLAS library (what `limit_blas_threads` set)."""
    return [int(pool["num_threads"]) for pool in threadpool_info() if pool["user_api"] == "blas"]
