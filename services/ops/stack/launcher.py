"""Start, inspect and stop the local stack as a whole, and single restartable servers.

`start_stack` starts every service not handed in by URL on a free port, records it in
``<state_dir>/infra.json`` and waits until it answers; `stop_stack` stops what is recorded
there; `stack_status` reports it. `Server` is one server the fault tests stop and start again.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final, Literal, TypedDict

from services.endpoints import SERVICES, Endpoints, InfraError, ServiceName, state_path
from services.ops.stack.processes import CHILDREN, exit_code, is_alive, start_ticks, terminate
from services.ops.stack.readiness import PROBES
from services.ops.stack.servers import free_port, launch, launch_spec, log_tail
from services.ops.stack.state import Record, read_records, write_state

__all__ = [
    "DEFAULT_READY_TIMEOUT",
    "DEFAULT_STOP_TIMEOUT",
    "Server",
    "ServiceStatus",
    "running_stack",
    "stack_status",
    "start_stack",
    "stop_stack",
]

log = logging.getLogger(__name__)

DEFAULT_READY_TIMEOUT: Final = 30.0
DEFAULT_STOP_TIMEOUT: Final = 10.0
_START_ATTEMPTS: Final = 3  # a free port can be taken between probing and binding: retry then


class ServiceStatus(TypedDict):
    """One service as reported by :func:`stack_status`."""

    endpoint: str
    managed: bool  # started by us (True) or handed in as a URL (False)
    pid: int | None
    alive: bool | None  # None when not managed: there is no process of ours to look at
    ready: bool
    log: str | None


def _spawn(name: ServiceName, state_dir: Path) -> Record:
    port = free_port()
    spec = launch_spec(name, port, state_dir)
    log_path = state_dir / f"{name}.log"
    proc = launch(spec, state_dir, log_path, "wb")  # the tail on failure is this run's
    CHILDREN[proc.pid] = proc
    return Record(
        endpoint=spec.endpoint,
        managed=True,
        pid=proc.pid,
        port=port,
        log=str(log_path),
        argv=spec.argv,
        start_ticks=start_ticks(proc.pid),
    )


def _wait_ready(
    name: ServiceName, rec: Record, pid: int, deadline: float
) -> Literal["ready", "exited"]:
    """Poll until the server answers; 'exited' if it died first; InfraError on timeout."""
    probe = PROBES[name]
    began = time.monotonic()
    while True:
        if not is_alive(pid, rec.start_ticks):
            return "exited"
        if probe(rec.endpoint, min(2.0, max(deadline - time.monotonic(), 0.2))):
            return "ready"
        if time.monotonic() >= deadline:
            raise InfraError(
                f"{name} (pid {pid}) not ready at {rec.endpoint} after "
                f"{time.monotonic() - began:.1f} s; "
                f"last lines of {rec.log}:\n{log_tail(rec.log)}"
            )
        time.sleep(0.1)


def _port_clash(log_path: str | None) -> bool:
    tail = log_tail(log_path, 15).lower()
    return "address already in use" in tail or "addrinuse" in tail


class Server:
    """One local server on a fixed port that can be stopped and started again: the fault
    tests stop a store mid-ingest and bring it back at the same address (MongoDB keeps its
    data directory; the broker and Redis start empty, as they are memory-only)."""

    def __init__(self, name: ServiceName, state_dir: Path) -> None:
        self.name = name
        self.state_dir = Path(state_dir).resolve()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.endpoint = launch_spec(name, self.port, self.state_dir).endpoint
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = DEFAULT_READY_TIMEOUT) -> None:
        """Start it (it must not be running) and wait until it answers."""
        if self._proc is not None:
            raise InfraError(f"{self.name} is already running (pid {self._proc.pid})")
        spec = launch_spec(self.name, self.port, self.state_dir)
        self._proc = launch(spec, self.state_dir, self.state_dir / f"{self.name}.log", "ab")
        deadline = time.monotonic() + timeout
        while not PROBES[self.name](self.endpoint, 1.0):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise InfraError(f"{self.name} did not start on port {self.port}")
            time.sleep(0.05)

    def stop(self, sig: signal.Signals = signal.SIGTERM, timeout: float = 15.0) -> None:
        """Signal it (by PID) and wait for it to exit; SIGKILL after `timeout`."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None


def start_stack(
    state_dir: Path,
    *,
    kafka: str | None = None,
    mongo: str | None = None,
    redis: str | None = None,
    timeout: float = DEFAULT_READY_TIMEOUT,
) -> Endpoints:
    """Start every service whose URL is None on a free 127.0.0.1 port and wait until it answers.

    Given URLs are used as they are (not started, not probed). PIDs, ports, log paths and the
    endpoints are recorded in ``state_dir/infra.json``. On failure everything started here is
    stopped again and :class:`InfraError` carries the server's log tail.
    """
    state_dir = Path(state_dir).resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    previous = read_records(state_dir)
    if previous is not None:
        live = [
            f"{n} (pid {r.pid})"
            for n, r in previous.items()
            if r.managed and r.pid is not None and is_alive(r.pid, r.start_ticks)
        ]
        if live:
            raise InfraError(
                f"a stack is already running from {state_dir}: {', '.join(live)}; "
                "stop it first (mnemostream infra down)"
            )
        state_path(state_dir).unlink(missing_ok=True)  # stale: every recorded process is gone

    given: dict[ServiceName, str | None] = {"kafka": kafka, "mongo": mongo, "redis": redis}
    records: dict[ServiceName, Record] = {
        name: Record(endpoint=url, managed=False) for name, url in given.items() if url is not None
    }
    try:
        for name in SERVICES:
            if name not in records:
                records[name] = _spawn(name, state_dir)
        write_state(state_dir, records, ready=False)  # `down` can clean up even if we crash now
        deadline = time.monotonic() + timeout
        for name in SERVICES:
            _await_service(name, records, state_dir, deadline)
    except BaseException:
        with contextlib.suppress(InfraError):  # keep the original error, not a cleanup one
            terminate(_managed_pids(records), DEFAULT_STOP_TIMEOUT)
        state_path(state_dir).unlink(missing_ok=True)
        raise
    write_state(state_dir, records, ready=True)
    return Endpoints(
        kafka_bootstrap=records["kafka"].endpoint,
        mongo_uri=records["mongo"].endpoint,
        redis_url=records["redis"].endpoint,
    )


def _await_service(
    name: ServiceName, records: dict[ServiceName, Record], state_dir: Path, deadline: float
) -> None:
    rec = records[name]
    for attempt in range(1, _START_ATTEMPTS + 1):
        if not rec.managed or rec.pid is None:
            return
        if _wait_ready(name, rec, rec.pid, deadline) == "ready":
            return
        code = exit_code(rec.pid)
        if attempt < _START_ATTEMPTS and _port_clash(rec.log) and time.monotonic() < deadline:
            log.info("%s lost its port %s to another process; retrying", name, rec.port)
            rec = records[name] = _spawn(name, state_dir)
            write_state(state_dir, records, ready=False)
            continue
        raise InfraError(
            f"{name} (pid {rec.pid}) exited before it was ready"
            f"{f' with code {code}' if code is not None else ''}; "
            f"last lines of {rec.log}:\n{log_tail(rec.log)}"
        )


def _managed_pids(records: dict[ServiceName, Record]) -> dict[ServiceName, tuple[int, int | None]]:
    return {
        name: (rec.pid, rec.start_ticks)
        for name, rec in records.items()
        if rec.managed and rec.pid is not None
    }


def stop_stack(
    state_dir: Path, *, timeout: float = DEFAULT_STOP_TIMEOUT, purge: bool = False
) -> list[str]:
    """Stop the servers recorded in ``state_dir/infra.json`` (SIGTERM, then SIGKILL).

    Only recorded PIDs whose start time still matches are signalled; ones already gone are
    skipped. Removes ``infra.json`` (with ``purge`` also the logs and the MongoDB data) and returns
    a line per service that was stopped, e.g. ``"kafka (pid 1234)"``.
    """
    state_dir = Path(state_dir).resolve()
    records = read_records(state_dir)
    if records is None:
        return []
    pids = {name: pt for name, pt in _managed_pids(records).items() if is_alive(*pt)}
    terminate(pids, timeout)
    state_path(state_dir).unlink(missing_ok=True)
    if purge:
        for name in SERVICES:
            (state_dir / f"{name}.log").unlink(missing_ok=True)
        shutil.rmtree(state_dir / "mongo-data", ignore_errors=True)
    return [f"{name} (pid {pid})" for name, (pid, _) in pids.items()]


def stack_status(state_dir: Path) -> dict[str, ServiceStatus]:
    """Each recorded service with its endpoint, PID, whether it is alive and whether it answers.

    Empty when ``state_dir`` holds no stack.
    """
    records = read_records(Path(state_dir).resolve())
    if records is None:
        return {}
    status: dict[str, ServiceStatus] = {}
    for name, rec in records.items():
        alive: bool | None = None
        if rec.managed:
            alive = rec.pid is not None and is_alive(rec.pid, rec.start_ticks)
        ready = alive is not False and PROBES[name](rec.endpoint, 2.0)
        status[name] = ServiceStatus(
            endpoint=rec.endpoint,
            managed=rec.managed,
            pid=rec.pid,
            alive=alive,
            ready=ready,
            log=rec.log,
        )
    return status


@contextlib.contextmanager
def running_stack(
    state_dir: Path,
    *,
    kafka: str | None = None,
    mongo: str | None = None,
    redis: str | None = None,
) -> Iterator[Endpoints]:
    """Start the stack, yield its endpoints, and always stop what was started."""
    endpoints = start_stack(state_dir, kafka=kafka, mongo=mongo, redis=redis)
    try:
        yield endpoints
    finally:
        stop_stack(state_dir)
