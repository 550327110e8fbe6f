"""A scripted local HTTP server for adapter tests: a stdlib `ThreadingHTTPServer` on a free
127.0.0.1 port, one thread per server, a `Responder` deciding each reply, every request recorded.

The `provider` and `client` fixtures are registered for the whole suite through
``pytest_plugins`` in ``tests/conftest.py``; a test module may still define its own.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes | dict[str, Any] | list[Any] = b""
    delay_s: float = 0.0


Responder = Callable[[Received], Reply]


@dataclass
class Provider:
    """A stub provider on 127.0.0.1: `respond` decides each reply; requests are recorded."""

    url: str
    received: list[Received] = field(default_factory=list)


def _handler(respond: Responder, received: list[Received]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            request = Received(
                self.path, {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length)
            )
            received.append(request)
            reply = respond(request)
            if reply.delay_s:
                time.sleep(reply.delay_s)
            body = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:  # the client gave up (timeout test)
                pass

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def provider() -> Iterator[Callable[[Responder], Provider]]:
    """Factory: start a provider server on a free port; all are stopped after the test."""
    servers: list[ThreadingHTTPServer] = []

    def start(respond: Responder) -> Provider:
        received: list[Received] = []
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(respond, received))
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        return Provider(url=f"http://127.0.0.1:{server.server_address[1]}", received=received)

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(trust_env=False) as c:  # no proxy from the environment
        yield c


def closed_port() -> int:
    """A port nothing listens on (bound, read, released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port
