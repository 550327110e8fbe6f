"""`services.ops.stack.secantus_serial`: the embedded server's write commands run one at a
time; reads, transaction statements and everything else run as they did."""

from __future__ import annotations

import threading
import time
import types
from collections.abc import Mapping
from typing import Any

import pytest

from services.ops.stack.secantus_serial import WRITES, apply, in_transaction, one_write_at_a_time

WAIT_S = 5.0


class Recorder:
    """A dispatch that records how many commands run at once; its write commands can be
    held (`hold`)."""

    def __init__(self) -> None:
        self.active = 0
        self.most = 0
        self.ran: list[str] = []
        self.mutex = threading.Lock()
        self.hold = threading.Event()
        self.hold.set()
        self.entered = threading.Event()

    def __call__(self, body: Mapping[str, Any], ctx: Any) -> Any:
        name = next(iter(body))
        with self.mutex:
            self.active += 1
            self.most = max(self.most, self.active)
        if name in WRITES:
            self.entered.set()
        try:
            assert name not in WRITES or self.hold.wait(WAIT_S)
            time.sleep(0.002)
            if body.get("fail"):
                raise RuntimeError(f"{name} failed")
            return {"ok": 1, "cmd": name, "ctx": ctx}
        finally:
            with self.mutex:
                self.active -= 1
                self.ran.append(name)


def in_threads(calls: list[tuple[Any, dict[str, Any]]]) -> list[threading.Thread]:
    threads = [threading.Thread(target=f, args=(body, None)) for f, body in calls]
    for t in threads:
        t.start()
    return threads


def test_write_commands_never_run_at_once() -> None:
    inner = Recorder()
    serial = one_write_at_a_time(inner)
    threads = in_threads([(serial, {name: "c"}) for name in sorted(WRITES) for _ in range(4)])
    for t in threads:
        t.join(WAIT_S)
    assert len(inner.ran) == 4 * len(WRITES)
    assert inner.most == 1


def test_without_the_lock_the_same_commands_do_overlap() -> None:
    """The check above can fail: unserialised, the recorder sees commands at once."""
    inner = Recorder()
    inner.hold.clear()
    threads = in_threads([(inner, {"insert": "c"}) for _ in range(3)])
    deadline = time.monotonic() + WAIT_S
    while inner.active < 3 and time.monotonic() < deadline:
        time.sleep(0.005)
    inner.hold.set()
    for t in threads:
        t.join(WAIT_S)
    assert inner.most > 1


def test_a_read_runs_while_a_write_holds_the_lock() -> None:
    inner = Recorder()
    serial = one_write_at_a_time(inner)
    inner.hold.clear()
    [writer] = in_threads([(serial, {"update": "c"})])
    assert inner.entered.wait(WAIT_S)
    assert serial({"find": "c"}, "r") == {"ok": 1, "cmd": "find", "ctx": "r"}
    assert writer.is_alive()  # the write still runs, with the lock held
    inner.hold.set()
    writer.join(WAIT_S)
    assert inner.ran == ["find", "update"]


def test_a_transaction_statement_is_not_queued_behind_a_plain_write() -> None:
    """A plain write that conflicts with an open transaction retries until the transaction
    ends: were the transaction's commit queued behind it, neither would finish."""
    lock = threading.Lock()
    inner = Recorder()
    serial = one_write_at_a_time(inner, lock)
    done: list[str] = []

    def transaction() -> None:
        statements = (
            {"update": "c", "autocommit": False, "txnNumber": 1},
            {"commitTransaction": 1, "autocommit": False},
        )
        done.extend(serial(body, None)["cmd"] for body in statements)

    with lock:  # a plain write holds the lock
        other = threading.Thread(target=transaction)
        other.start()
        other.join(WAIT_S)
        assert done == ["update", "commitTransaction"]
    assert in_transaction({"insert": "c", "txnNumber": 3}) is False  # a retryable write
    assert in_transaction({"insert": "c", "txnNumber": 3, "autocommit": False}) is True


def test_a_failed_write_releases_the_lock_and_raises_its_own_error() -> None:
    lock = threading.Lock()
    serial = one_write_at_a_time(Recorder(), lock)
    with pytest.raises(RuntimeError, match="insert failed"):
        serial({"insert": "c", "fail": True}, None)
    assert not lock.locked()
    assert serial({"delete": "c"}, 7) == {"ok": 1, "cmd": "delete", "ctx": 7}


def test_apply_replaces_the_servers_dispatch_once() -> None:
    inner = Recorder()
    server = types.SimpleNamespace(dispatch=inner)
    apply(server)
    wrapped = server.dispatch
    assert wrapped is not inner
    apply(server)
    assert server.dispatch is wrapped  # not wrapped twice
    assert wrapped({"findAndModify": "c"}, None)["cmd"] == "findAndModify"
    assert inner.ran == ["findAndModify"]
