"""Supervision of the servers by recorded PID: liveness, signals, termination.

Only PIDs we recorded are ever signalled, and only while their start time (from /proc) still
matches the recorded one — never a process found by name. Each server leads its own session,
so a signal goes to its whole process group.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from pathlib import Path

from services.endpoints import InfraError, ServiceName

__all__ = ["CHILDREN", "exit_code", "is_alive", "start_ticks", "terminate"]

log = logging.getLogger(__name__)

CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
"""Popen objects of the servers this process started, by PID: lets `stop_stack` reap its own
children (a zombie still answers ``os.kill(pid, 0)``) and keeps Popen from warning on GC."""


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state letter, start time in clock ticks) from /proc, or None where there is no /proc."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()  # fields from #3 (state) on; comm may hold spaces
    try:
        return fields[0], int(fields[19])
    except (IndexError, ValueError):
        return None


def start_ticks(pid: int) -> int | None:
    """The start time of ``pid`` in clock ticks since boot, or None where there is no /proc."""
    stat = _proc_stat(pid)
    return stat[1] if stat else None


def _own_child_alive(pid: int) -> bool | None:
    """For a child of this process: whether it still runs (reaping it once it exited).

    None when ``pid`` is not our child. For our children only ``waitpid`` is authoritative: a
    multi-threaded server's main thread shows as a zombie in /proc while its other threads are
    still exiting, and cannot be reaped yet.
    """
    child = CHILDREN.get(pid)
    if child is not None:
        if child.poll() is None:
            return True
        CHILDREN.pop(pid, None)
        return False
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return None
    return done != pid


def is_alive(pid: int, start_ticks: int | None) -> bool:
    """Whether the process we recorded (same PID *and* same start time) is still running."""
    own = _own_child_alive(pid)
    if own is not None:
        return own
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # a PID of another user's process: certainly not the one we started
    stat = _proc_stat(pid)
    if stat is None:
        return True  # no /proc (not Linux): trust the PID
    state, ticks = stat
    if state in ("Z", "X"):
        return False  # exited; its parent (init, or whoever adopted it) reaps it
    return start_ticks is None or ticks == start_ticks


def exit_code(pid: int) -> int | None:
    """The exit code of a server this process started and reaped, else None."""
    child = CHILDREN.get(pid)
    return child.returncode if child is not None else None


def _signal(pid: int, sig: signal.Signals) -> None:
    """Signal a recorded server and its process group (it leads its own session)."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
            return
    except (ProcessLookupError, PermissionError):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def terminate(pids: dict[ServiceName, tuple[int, int | None]], timeout: float) -> None:
    """SIGTERM every live recorded PID, wait up to ``timeout`` seconds, then SIGKILL the rest.

    ``pids`` maps a service to its (PID, start ticks); `InfraError` if one outlives SIGKILL
    by 5 s.
    """
    live = {name: pt for name, pt in pids.items() if is_alive(*pt)}
    for pid, _ in live.values():
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while live and time.monotonic() < deadline:
        live = {name: pt for name, pt in live.items() if is_alive(*pt)}
        if live:
            time.sleep(0.05)
    for name, (pid, _) in live.items():
        log.warning("%s (pid %d) ignored SIGTERM for %.0f s; sending SIGKILL", name, pid, timeout)
        _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while live and time.monotonic() < deadline:
        live = {name: pt for name, pt in live.items() if is_alive(*pt)}
        if live:
            time.sleep(0.05)
    if live:
        raise InfraError(
            f"could not stop {', '.join(f'{n} (pid {p})' for n, (p, _) in live.items())}"
        )
