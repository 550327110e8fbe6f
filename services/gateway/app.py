"""The HTTP gateway's app factory: the reference's `/api/memory/...` routes (reference §13)
in front of the Kafka services. Writes publish events; reads are request-reply. Liveness,
readiness and metrics: `services.gateway.probes`; the memory console's pages under
`/console`: `services.gateway.console`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from services.endpoints import NotConfigured, read_endpoints
from services.gateway import (
    compat,
    console,
    errors,
    export,
    items,
    loop,
    manifests,
    ops,
    patterns,
    probes,
    rerank,
    sessions,
    workflows,
)
from services.gateway.auth import Authenticator
from services.gateway.limits import BodyLimit
from services.gateway.metrics import GatewayMetrics, Instrumented
from services.gateway.models import Health
from services.sdk.client import MemoryClient
from services.sdk.sealed_path import Sealer
from services.settings import Settings
from services.stream.security import kafka_options

PREFIX = "/api/memory"
CONSOLE = "/console"
"""The memory console's pages (`services.gateway.console`), same credentials as the API."""


def kafka_bootstrap(settings: Settings) -> str:
    """The configured Kafka bootstrap, else the local stack's (`mnemostream infra up`)."""
    if settings.kafka.bootstrap:
        return settings.kafka.bootstrap
    local = read_endpoints(settings.state_dir)
    if local is None:
        raise NotConfigured(
            "no Kafka configured: set MNEMOSTREAM_KAFKA_BOOTSTRAP or run `mnemostream infra up`"
        )
    return local.kafka_bootstrap


def _document_errors(app: FastAPI) -> None:
    """The OpenAPI document with the gateway's own error bodies only: every route documents
    its 422 as `{"error": ...}` (`errors.ERRORS`: a value out of its range; other validation
    problems are 400), so FastAPI adds no `HTTPValidationError` of its own; its schemas are
    dropped should one appear."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            spec = get_openapi(
                title=app.title,
                version=app.version,
                summary=app.summary,
                description=app.description,
                routes=app.routes,
            )
            schemas = spec.get("components", {}).get("schemas", {})
            for name in ("HTTPValidationError", "ValidationError"):
                schemas.pop(name, None)
            app.openapi_schema = spec
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


EdgeSealing = Callable[[], AbstractAsyncContextManager[Sealer | None]]
"""Opens the gateway's event sealer for its lifetime (`services.runtime.edge.edge_sealer`:
None without an event key)."""


def create_app(
    settings: Settings, client: MemoryClient | None = None, *, sealing: EdgeSealing | None = None
) -> FastAPI:
    """The gateway. Without `client`, the lifespan opens a `MemoryClient` on the configured
    Kafka and closes it on shutdown; a given client is used as is (its owner closes it).
    `sealing` (from the composition root, which may reach MongoDB): with an event key, the
    gateway seals turns, remembers, knowledge and checkpoints itself and publishes them to
    their source topics (`services.sdk.sealed_path`); without one it follows
    `MNEMOSTREAM_EVENT_INGRESS`.

    Raises `GatewayNotSecured` when no API key, operator key or JWT secret is configured
    and `gateway_allow_anonymous` is not set: the gateway does not start open by accident."""
    auth = Authenticator.from_settings(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if client is not None:
            app.state.client = client
            yield
            return
        opened = sealing() if sealing is not None else nullcontext(None)
        async with (
            opened as sealer,
            MemoryClient(
                kafka_bootstrap(settings),
                timeout=settings.request_timeout_seconds,
                kafka_options=kafka_options(settings),
                group_prefix=settings.group_prefix,
                deferred_embeddings=settings.embedding.deferred,
                wait_timeout=settings.request_timeout_seconds,
                actor="gateway",
                # sealed events: sealed here when the gateway holds the key, else by the
                # sealing group when the ingress is set
                ingress=settings.sealing.ingress and sealer is None,
                sealer=sealer,
            ) as own,
        ):
            app.state.client = own
            yield

    app = FastAPI(
        title="mnemostream gateway",
        version="1",
        summary="Memory for AI agents: the canonical loop, items, patterns, jobs, evals, "
        "knowledge and workflow memory.",
        description=(
            "Writes (turns, remember, knowledge, workflow checkpoints, jobs) are published to "
            "Kafka and answered 202 with the ids of what will be stored; reads are "
            "request-reply over Kafka. Every error is "
            '`{"error": "<message>"}`. Authenticate with `X-API-Key` or `Authorization: '
            "Bearer`: a tenant API key, or a JWT with `exp` and an `agent` (and `user`) claim, "
            "acts only for its own agentWallet (and userAddress), which requests may omit; an "
            'operator key or a token with `scope: "operator"` acts for every tenant.'
        ),
        lifespan=lifespan,
    )
    app.state.auth = auth
    app.state.metrics = metrics = GatewayMetrics()
    errors.install(app)
    app.add_middleware(BodyLimit)
    app.add_middleware(Instrumented, metrics=metrics)  # added last: outermost
    app.include_router(probes.router)
    metrics.routes.add(probes.router.routes)
    modules = (loop, items, sessions, patterns, ops, workflows, manifests, compat, rerank, export)
    for module in modules:
        app.include_router(module.router, prefix=PREFIX)
        metrics.routes.add(module.router.routes, PREFIX)
    # GET /api/memory/{agentWallet} matches any one segment: included after every other route
    app.include_router(compat.listing, prefix=PREFIX)
    metrics.routes.add(compat.listing.routes, PREFIX)
    app.state.console = console.ConsoleKafka(
        lambda: kafka_bootstrap(settings), settings.group_prefix, kafka_options(settings)
    )
    app.include_router(console.router, prefix=CONSOLE)
    metrics.routes.add(console.router.routes, CONSOLE)

    _document_errors(app)

    @app.get("/healthz", response_model=Health, tags=["health"])
    async def healthz() -> Health:
        """Liveness (no authentication): the process is up and its Kafka client started
        (kept for existing probes; `/livez` and `/readyz` are the operational pair)."""
        return Health()

    metrics.routes.add(app.routes)  # its own: /healthz, /openapi.json, /docs, /redoc
    return app
