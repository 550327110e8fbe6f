"""The throughput benchmark's subprocesses: `mnemostream run <group>` processes, each with its
own `/readyz` port, all stopped by PID; time to ready; consumer lag."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from schemas import topics
from services.endpoints import Endpoints
from services.stream.offsets import TopicPartition, committed, end_offsets

RUN = (sys.executable, "-m", "services", "run")

OPTIONAL_GROUPS = ("embeddings",)
"""Groups that may not exist yet: a process of one that exits at once with "unknown group"
is dropped (and reported) instead of failing the run."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def group_env(ends: Endpoints, db: str, prefix: str) -> dict[str, str]:
    """The environment of a group process: the stack, a fresh database and group prefix."""
    return {
        **os.environ,
        **ends.to_env(),
        "MNEMOSTREAM_MONGO_DB": db,
        "MNEMOSTREAM_GROUP_PREFIX": prefix,
        "MNEMOSTREAM_SESSION_TIMEOUT_MS": "2000",
        "MNEMOSTREAM_HEARTBEAT_INTERVAL_MS": "500",
    }


def cli(env: dict[str, str], *args: str) -> None:
    """`python -m services ARGS` to completion (db init, topics create)."""
    subprocess.run(
        [sys.executable, "-m", "services", *args], env=env, check=True, capture_output=True
    )


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as reply:
            return int(reply.status) == 200
    except (urllib.error.URLError, OSError):
        return False


@dataclass(slots=True)
class GroupProc:
    group: str
    port: int
    log: Path
    proc: subprocess.Popen[bytes]

    def tail(self, chars: int = 2000) -> str:
        try:
            return self.log.read_text(encoding="utf-8", errors="replace")[-chars:]
        except OSError:
            return ""


@dataclass(slots=True)
class Running:
    procs: list[GroupProc] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    """Optional groups this version does not have."""

    def check(self) -> None:
        """RuntimeError when a group process has died."""
        for p in self.procs:
            if p.proc.poll() is not None:
                raise RuntimeError(f"group {p.group} exited ({p.proc.returncode}):\n{p.tail()}")


def spawn(env: dict[str, str], group: str, tag: str, n: int) -> GroupProc:
    port = free_port()
    log = Path(tempfile.gettempdir()) / f"mnemostream-throughput-{tag}-{group}-{n}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*RUN, group, "--log-level", "warning", "--http-port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return GroupProc(group, port, log, proc)


def stop(procs: Sequence[GroupProc]) -> None:
    """SIGTERM each by PID, then wait (SIGKILL after 30 s)."""
    for p in procs:
        if p.proc.poll() is None:
            p.proc.terminate()
    for p in procs:
        try:
            p.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.proc.kill()
            p.proc.wait()


def wait_ready(running: Running, timeout: float = 180) -> None:
    """Until every process answers /readyz 200; an optional group that exits saying it is
    unknown is dropped into `running.missing`."""
    deadline = time.monotonic() + timeout
    waiting = list(running.procs)
    while waiting:
        for p in list(waiting):
            if p.proc.poll() is not None:
                if p.group in OPTIONAL_GROUPS and "unknown group" in p.tail():
                    running.procs.remove(p)
                    waiting.remove(p)
                    if p.group not in running.missing:
                        running.missing.append(p.group)
                    continue
                raise RuntimeError(f"group {p.group} exited ({p.proc.returncode}):\n{p.tail()}")
            if ready(p.port):
                waiting.remove(p)
        if time.monotonic() > deadline:
            raise TimeoutError(f"not ready within {timeout:.0f} s: {[p.group for p in waiting]}")
        time.sleep(0.2)


@contextlib.contextmanager
def group_processes(
    env: dict[str, str], tag: str, groups: Sequence[tuple[str, int]]
) -> Iterator[Running]:
    """(group, process count) each as that many `mnemostream run <group>` processes, ready
    (every subscriber joined) when entered; stopped by PID on exit."""
    running = Running()
    try:
        for group, count in groups:
            running.procs.extend(spawn(env, group, tag, n) for n in range(count))
        wait_ready(running)
        yield running
    finally:
        stop(running.procs)


def time_to_ready(env: dict[str, str], group: str, tag: str, timeout: float = 180) -> float:
    """Seconds from starting `mnemostream run <group> --http-port P` until /readyz is 200."""
    # the defaults a user gets: the benchmark's own groups join faster (2 s sessions)
    env = {
        k: v
        for k, v in env.items()
        if k not in ("MNEMOSTREAM_SESSION_TIMEOUT_MS", "MNEMOSTREAM_HEARTBEAT_INTERVAL_MS")
    }
    began = time.monotonic()
    p = spawn(env, group, tag, 0)
    try:
        while not ready(p.port):
            if p.proc.poll() is not None:
                raise RuntimeError(f"run {group} exited ({p.proc.returncode}):\n{p.tail()}")
            if time.monotonic() - began > timeout:
                raise TimeoutError(f"run {group} not ready within {timeout:.0f} s")
            time.sleep(0.05)
        return time.monotonic() - began
    finally:
        stop([p])


async def turns_lag(bootstrap: str, group_id: str) -> int:
    """Records of `memory.turns.v1` the group has not committed yet."""
    ends = await end_offsets(bootstrap, [topics.TURNS])
    done = await committed(bootstrap, group_id, [TopicPartition(t, n) for t, n in sorted(ends)])
    return sum(max(0, end - max(done.get(k, 0), 0)) for k, end in ends.items())
