"""One write command at a time in the embedded MongoDB-wire server (issue 29), applied by
`services.ops.stack.secantus_tuned.tune`.

SecantusDB runs each connection's commands on a thread of its own, in one Python process, and
its storage engine's calls hand the interpreter lock back and forth between threads many times
per command. Two connections writing at once (two processes of a writer group, or the
transcripts group's batches beside the embeddings group's vector fill) therefore took longer
together than one after the other. An ad-hoc probe (stop 51): `record_many` in batches of 500
turns over 50 threads, split between two concurrent writers on disjoint threads, stored 1,559
and 1,284 turns/s; with this lock, alternated, 1,909 and 2,017, about what one writer alone
stores (1,562-1,998 in the same hour). The server counted no write-conflict retry in those
runs, so the loss was the threads' switching, not conflicts. Here the write commands
(`WRITES`) take one process-wide lock around their whole execution: concurrent writers queue
at the server and each command runs without interleaving, as a single writer's do.

Left as they were:

* reads (`find`, `aggregate`, `count`, …), so a pre_turn read never waits for a bulk write
  (tried: with reads queued too, a thread's newest turns and its head, read every 10 ms
  beside batches of 65 turns, took p50 40 ms instead of 13);
* a command inside a multi-document transaction (`autocommit: false`): a plain write that
  conflicts with an open transaction retries until that transaction ends, so the
  transaction's own statements must not queue behind it;
* everything that may wait on another connection (`getMore` on an awaitable cursor, an
  awaitable `hello`), which is neither a write nor locked.

The lock is taken outside every lock of the storage engine (at the command's dispatch), so it
cannot invert their order."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

WRITES = frozenset({"insert", "update", "delete", "findAndModify", "findandmodify", "bulkWrite"})
"""The write commands that run one at a time (`bulkWrite`: the client-level bulk write of
MongoDB 8, which the server answers too)."""

Dispatch = Callable[[Mapping[str, Any], Any], Any]


def in_transaction(body: Mapping[str, Any]) -> bool:
    """Whether a command belongs to a multi-document transaction (a retryable write carries
    a `txnNumber` too, but not `autocommit: false`)."""
    return body.get("autocommit") is False


def one_write_at_a_time(dispatch: Dispatch, lock: threading.Lock | None = None) -> Dispatch:
    """`dispatch`, with each write command (`WRITES`, outside a transaction) run under `lock`
    (a new one by default); other commands as they were."""
    held = lock or threading.Lock()

    def serial_dispatch(body: Mapping[str, Any], ctx: Any) -> Any:
        name = next(iter(body), None)
        if name not in WRITES or in_transaction(body):
            return dispatch(body, ctx)
        with held:
            return dispatch(body, ctx)

    serial_dispatch._mnemostream_serial = True  # type: ignore[attr-defined]
    return serial_dispatch


def apply(server_module: Any) -> None:
    """Replace the server's `dispatch` (the name its connection threads call) once."""
    current = server_module.dispatch
    if not getattr(current, "_mnemostream_serial", False):
        server_module.dispatch = one_write_at_a_time(current)
