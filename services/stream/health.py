"""Health and metrics over HTTP, served by uvicorn in the broker's own event loop.

* `GET /livez` — 200 while the process and its event loop run (answering at all proves it).
* `GET /readyz` — 200 once the database schema is ensured and every subscriber of this
  process has joined its group and holds a partition assignment, and none of the partitions
  it holds is stalled (`services.stream.stalls`); otherwise 503 with
  `{"status": "unready", "missing": [...]}` naming each missing piece. A member left without
  partitions (more members of a group than partitions) stays unready by this definition.
* `GET /metrics` — the process registry in the Prometheus text format.

The scheduler serves the same app with its own readiness (`services.ops.scheduler`); the gateway
answers the same three paths with the same bodies from its FastAPI app (`live_response`,
`ready_response`, `metrics_response`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import AsyncIterator, Generator, Iterable, Sequence
from typing import Any, Protocol

import uvicorn
from faststream.kafka.subscriber.usecase import LogicSubscriber
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from services.stream.stalls import Stall, StallWatch

log = logging.getLogger(__name__)


class Probe(Protocol):
    """What `/readyz` asks: the pieces still missing, in words; empty when ready."""

    def missing(self) -> list[str]: ...


class Readiness:
    """What `/readyz` checks of a group process: set by the composition root as start-up
    proceeds."""

    def __init__(self, stalls: StallWatch | None = None) -> None:
        self.schema_ready = False
        self.notes: list[str] = []
        """What works but an operator should know (`/readyz` lists it; not a reason to be
        unready): a source topic that drops records (`services.stream.retention`)."""
        self._stalls = stalls
        self._subscribers: list[LogicSubscriber[Any]] | None = None

    def watch(self, subscribers: Iterable[object]) -> None:
        """Require every Kafka subscriber among `subscribers` to hold an assignment (until
        this is called, the process is not ready)."""
        self._subscribers = [s for s in subscribers if isinstance(s, LogicSubscriber)]

    def missing(self) -> list[str]:
        """What keeps the process from being ready, in words; empty when ready."""
        missing = [] if self.schema_ready else ["database schema not ensured yet"]
        if self._subscribers is None:
            return [*missing, "consumer groups not registered yet"]
        for sub in self._subscribers:
            name = f"{sub.group_id} ({', '.join(sub.topic_names_for_subscribe)})"
            consumer = sub.consumer
            if consumer is None:
                missing.append(f"{name}: consumer not started")
            elif not consumer.assignment():
                missing.append(f"{name}: no partition assignment (group not joined)")
        return missing + [stall.describe() for stall in self._held_stalls()]

    def _held_stalls(self) -> list[Stall]:
        """The stalled partitions that a subscriber of this process holds."""
        if self._stalls is None or self._subscribers is None:
            return []
        held: set[tuple[str | None, str, int]] = set()
        for sub in self._subscribers:
            for consumer in getattr(sub, "consumer_subgroup", None) or [sub.consumer]:
                if consumer is not None:
                    parts = consumer.assignment()
                    held.update((sub.group_id, tp.topic, tp.partition) for tp in parts)
        return [s for s in self._stalls.stalls() if (s.group, s.topic, s.partition) in held]


def live_response() -> Response:
    """The `/livez` answer: 200 `{"status": "alive"}`."""
    return JSONResponse({"status": "alive"})


def ready_response(missing: list[str], notes: Sequence[str] = ()) -> Response:
    """The `/readyz` answer: 200 `{"status": "ready", "missing": []}` when nothing is
    missing, else 503 `{"status": "unready", "missing": [...]}`; with `notes` (what works but
    an operator should know, e.g. a source topic that drops records) under `notes`."""
    extra = {"notes": list(notes)} if notes else {}
    if missing:
        return JSONResponse({"status": "unready", "missing": missing, **extra}, status_code=503)
    return JSONResponse({"status": "ready", "missing": [], **extra})


def metrics_response(registry: CollectorRegistry) -> Response:
    """The `/metrics` answer: `registry` in the Prometheus text format."""
    return Response(generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST})


def health_app(readiness: Probe, registry: CollectorRegistry) -> Starlette:
    """The ASGI app of `/livez`, `/readyz` and `/metrics`."""

    async def livez(_: Request) -> Response:
        return live_response()

    async def readyz(_: Request) -> Response:
        return ready_response(readiness.missing(), getattr(readiness, "notes", ()))

    async def metrics(_: Request) -> Response:
        return metrics_response(registry)

    return Starlette(
        routes=[
            Route("/livez", livez, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"]),
        ]
    )


class _InLoopServer(uvicorn.Server):
    # the process owner (the CLI) handles SIGINT/SIGTERM with loop signal handlers; uvicorn's
    # own capture would replace them and re-raise the signal after shutdown
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


@contextlib.asynccontextmanager
async def serving(
    app: Starlette, host: str, port: int, *, required: bool = True
) -> AsyncIterator[int | None]:
    """Serve `app` on `host:port` in this event loop until the context exits; yields the
    port, or None when `port` is 0 (disabled). If the address cannot be bound: OSError, or
    when not `required`, a logged warning and None."""
    if port == 0:
        yield None
        return
    # binding here (not in uvicorn) turns a taken port into an OSError for the caller
    # instead of uvicorn's sys.exit inside a task
    try:
        sock = socket.create_server((host, port), family=_family(host))
    except OSError as exc:
        if required:
            raise
        log.warning("health and metrics not served: %s:%d unavailable (%s)", host, port, exc)
        yield None
        return
    server = _InLoopServer(
        uvicorn.Config(app, lifespan="off", log_config=None, access_log=False, log_level="warning")
    )
    task = asyncio.create_task(server.serve(sockets=[sock]), name="health-http")
    try:
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("the health server stopped during start-up")
            await asyncio.sleep(0.01)
        log.info("health and metrics on http://%s:%d", host, port)
        yield port
    finally:
        server.should_exit = True
        await asyncio.gather(task, return_exceptions=True)
        sock.close()


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET
