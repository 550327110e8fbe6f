"""The MCP server's composition root: one `MemoryClient` for the process, the tools over it,
and the transport — stdio (`serve_stdio`) or streamable HTTP behind the gateway's
credentials (`serve_http`). Nothing is opened at import."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import metadata

import uvicorn
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

from schemas.scope import Scope
from services.gateway.app import kafka_bootstrap
from services.gateway.auth import Authenticator
from services.mcp.auth import GatewayTokenVerifier, caller
from services.mcp.tenancy import NO_AGENT, Refused, Tenancy
from services.mcp.tools import memory_tools
from services.sdk.client import MemoryClient
from services.settings import Settings
from services.stream.security import kafka_options

__all__ = ["HTTP_PATH", "build_server", "serve_http", "serve_stdio", "tenancy_of"]

log = logging.getLogger(__name__)

HTTP_PATH = "/mcp"
"""Where the streamable HTTP transport is served."""

INSTRUCTIONS = (
    "Long-term memory of the user you are talking to (mnemostream). Before answering, call "
    "recall with the user's message and use the context it returns; after answering, call "
    "record_turn with the exchange. When the user states something worth keeping (a "
    "preference, a fact about them, a decision), call remember. search_memory shows the "
    "stored items with their scores; list_facts the facts with when they were true; forget "
    "removes an item, or everything about the user when they ask for it. The user and agent "
    "are fixed by the server: no tool can reach anyone else's memory."
)


def _version() -> str:
    try:
        return metadata.version("mnemostream")
    except metadata.PackageNotFoundError:  # a source checkout that was never installed
        return "0"


def tenancy_of(settings: Settings, **given: str | None) -> Tenancy:
    """The configured tenant: `given` (the CLI's flags) over `settings.mcp`."""
    mcp = settings.mcp
    chosen = {"agent": mcp.agent, "user": mcp.user, "thread": mcp.thread}
    chosen.update({k: v for k, v in given.items() if v is not None})
    return Tenancy(**chosen)


def build_server(
    client: MemoryClient,
    tenancy: Tenancy,
    *,
    verifier: GatewayTokenVerifier | None = None,
    resource_url: str | None = None,
) -> MCPServer:
    """The MCP server over `client`. With `verifier` (HTTP), every call is scoped by the
    request's credential (`Tenancy.scope`) and a call without one is refused; without it
    (stdio), by the configuration alone."""

    def scope_of() -> Scope:
        who = caller()
        if verifier is not None and who is None:
            raise Refused("the request carried no valid credential")
        return tenancy.scope(who)

    auth = None
    if verifier is not None:
        # the gateway issues the credentials: no OAuth authorization server is advertised
        auth = AuthSettings(issuer_url=resource_url or "http://127.0.0.1", resource_server_url=None)
    return MCPServer(
        "mnemostream",
        title="mnemostream memory",
        instructions=INSTRUCTIONS,
        version=_version(),
        tools=memory_tools(client, scope_of),
        token_verifier=verifier,
        auth=auth,
    )


@asynccontextmanager
async def _client(settings: Settings) -> AsyncIterator[MemoryClient]:
    async with MemoryClient(
        kafka_bootstrap(settings),
        timeout=settings.request_timeout_seconds,
        kafka_options=kafka_options(settings),
        # remember waits until its fact is stored (read-your-writes): the deployment's groups
        group_prefix=settings.group_prefix,
        deferred_embeddings=settings.embedding.deferred,
    ) as client:
        yield client


async def serve_stdio(settings: Settings, tenancy: Tenancy) -> None:
    """Serve MCP on stdin/stdout until stdin closes. `Refused` when no agent is configured
    (over stdio nothing else can name one)."""
    if tenancy.agent is None:
        raise Refused(NO_AGENT)
    async with _client(settings) as client:
        await build_server(client, tenancy).run_stdio_async()


async def serve_http(settings: Settings, tenancy: Tenancy, port: int) -> None:
    """Serve MCP over streamable HTTP on `settings.mcp.host:port` at `HTTP_PATH`, every
    request authenticated with the gateway's credentials (`GatewayNotSecured` when none is
    configured; an explicitly anonymous gateway serves the configured tenant to anyone),
    until SIGINT/SIGTERM."""
    auth = Authenticator.from_settings(settings)
    host = settings.mcp.host
    gw = settings.gateway
    # as the gateway: anonymous only when allowed explicitly and no credential is configured
    open_to_all = gw.allow_anonymous and not (gw.api_keys or gw.operator_keys or gw.jwt_secret)
    if open_to_all:
        log.warning("MCP over HTTP without credentials (MNEMOSTREAM_GATEWAY_ALLOW_ANONYMOUS)")
    verifier = None if open_to_all else GatewayTokenVerifier(auth)
    async with _client(settings) as client:
        server = build_server(
            client, tenancy, verifier=verifier, resource_url=f"http://{host}:{port}"
        )
        app = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host)
        config = uvicorn.Config(app, host=host, port=port, log_level="warning")
        await uvicorn.Server(config).serve()
