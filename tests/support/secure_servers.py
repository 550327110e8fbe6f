"""Real servers with authentication and TLS on free ports, each stopped by its PID:
`redis-server` with `--requirepass` (and `--tls-port`), SecantusDB with `--auth` (and TLS),
and the Tansu broker with `--authentication`."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pymongo import MongoClient

from services.ops.stack.servers import (
    HOST,
    free_port,
    redis_server_binary,
    secantus_argv,
    tansu_binary,
)
from tests.support.certs import Certs


def _wait_port(proc: subprocess.Popen[bytes], port: int, log: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited ({proc.returncode}):\n{log.read_text()[-2000:]}")
        with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=0.5):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"nothing listens on {port}:\n{log.read_text()[-2000:]}")
        time.sleep(0.05)


@contextlib.contextmanager
def _process(argv: list[str], log: Path, cwd: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("ab") as out:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=cwd
        )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@contextlib.contextmanager
def redis_server(directory: Path, *, password: str, certs: Certs | None = None) -> Iterator[str]:
    """A `redis://` URL (without credentials) of a Redis that requires `password`; with
    `certs` it listens only with TLS (the URL is still `redis://`: TLS is the setting's job).
    Skips the test when this redis-server has no TLS support."""
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    argv = [redis_server_binary(), "--bind", HOST, "--save", "", "--appendonly", "no"]
    argv += ["--dir", str(directory), "--requirepass", password]
    if certs is None:
        argv += ["--port", str(port)]
    else:
        argv += ["--port", "0", "--tls-port", str(port), "--tls-auth-clients", "no"]
        argv += ["--tls-cert-file", str(certs.cert), "--tls-key-file", str(certs.key)]
        argv += ["--tls-ca-cert-file", str(certs.ca)]
    log = directory / f"redis-{port}.log"
    with _process(argv, log, directory) as proc:
        try:
            _wait_port(proc, port, log)
        except RuntimeError:
            text = log.read_text().lower()
            if certs is not None and "tls" in text and "bad directive" in text:
                pytest.skip("this redis-server was built without TLS (no --tls-port)")
            raise
        yield f"redis://{HOST}:{port}/0"


@contextlib.contextmanager
def secantus_server(
    directory: Path, *, certs: Certs, username: str, password: str
) -> Iterator[str]:
    """A `mongodb://` URI (no credentials, no TLS options) of a SecantusDB that requires TLS
    and SCRAM authentication as `username` (a root user, provisioned before `--auth`)."""
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    data = directory / "mongo-data"
    base = [*secantus_argv(), "--host", HOST, "--port", str(port), "--storage-path", str(data)]
    log = directory / f"mongo-{port}.log"
    uri = f"mongodb://{HOST}:{port}/?retryWrites=false"
    with _process(base, log, directory) as proc:
        _wait_port(proc, port, log)
        client: MongoClient[dict[str, object]] = MongoClient(uri, serverSelectionTimeoutMS=15_000)
        try:
            client.admin.command("createUser", username, pwd=password, roles=["root"])
        finally:
            client.close()
    secure = [*base, "--auth", "--tls-cert-file", str(certs.cert), "--tls-key-file", str(certs.key)]
    with _process(secure, log, directory) as proc:
        _wait_port(proc, port, log)
        yield uri


@contextlib.contextmanager
def tansu_with_authentication(directory: Path) -> Iterator[str]:
    """The bootstrap of a Tansu broker started with `--authentication` (SASL required)."""
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"tcp://{HOST}:{port}"
    argv = [str(tansu_binary()), "broker", "--listener-url", url]
    argv += ["--advertised-listener-url", url, "--storage-engine", "memory://tansu/"]
    argv += ["--authentication"]
    log = directory / f"kafka-{port}.log"
    with _process(argv, log, directory) as proc:
        _wait_port(proc, port, log)
        yield f"{HOST}:{port}"
