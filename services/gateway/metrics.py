"""The gateway's Prometheus metrics, in a registry of its own (built by `create_app`, never at
import, so two gateways in one process never share a counter):

| metric | type | labels |
| --- | --- | --- |
| `mnemostream_gateway_requests_total` | counter | route, method, status (`2xx` … `5xx`) |
| `mnemostream_gateway_request_duration_seconds` | histogram | route |
| `mnemostream_gateway_upstream_timeouts_total` (the 504s) | counter | route |

`route` is the route's template (`/api/memory/items/{item_id}`), never the raw path, so no
tenant or item id becomes a label; a path no route matches is `unmatched`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Histogram
from starlette.routing import BaseRoute, compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

UNMATCHED = "unmatched"
"""The `route` label of a request no route matches (a 404, whatever its path)."""


class RouteTemplates:
    """The path templates of an app's routes, prefixes included, matched against a request's
    path (not through the router: a request rejected before routing, like the body limit's
    413s, gets its template too)."""

    def __init__(self) -> None:
        self._known: list[tuple[re.Pattern[str], str, frozenset[str]]] = []

    def add(self, routes: Iterable[BaseRoute], prefix: str = "") -> None:
        """Learn `routes` (those with a path), mounted under `prefix`, after the known ones."""
        for route in routes:
            path = getattr(route, "path", None)
            if isinstance(path, str):
                regex, _, _ = compile_path(prefix + path)
                methods = frozenset(getattr(route, "methods", None) or ())
                self._known.append((regex, prefix + path, methods))

    def of(self, method: str, path: str) -> str:
        """The template of the first route matching `path` and `method`, else of the first
        matching `path` alone (a 405), else `UNMATCHED`."""
        other: str | None = None
        for regex, template, methods in self._known:
            if regex.match(path):
                if not methods or method in methods:
                    return template
                other = other or template
        return other or UNMATCHED


class GatewayMetrics:
    """Every metric of one gateway, registered in `registry` (a fresh one by default), and
    the templates its requests are labelled by (`routes`, filled by the app factory)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.routes = RouteTemplates()
        r = self.registry
        self.requests = Counter(
            "mnemostream_gateway_requests",
            "HTTP requests answered, by route template, method and status class.",
            ["route", "method", "status"],
            registry=r,
        )
        self.seconds = Histogram(
            "mnemostream_gateway_request_duration_seconds",
            "Seconds from receiving a request to the end of its answer, by route template.",
            ["route"],
            registry=r,
        )
        self.timeouts = Counter(
            "mnemostream_gateway_upstream_timeouts",
            "Requests answered 504: the memory service did not reply in time (request-reply).",
            ["route"],
            registry=r,
        )

    def route_of(self, scope: Scope) -> str:
        """The route template of an HTTP request's scope."""
        return self.routes.of(scope["method"], scope["path"])

    def answered(self, route: str, method: str, status: int, seconds: float) -> None:
        """Count one answered request; `status` is the HTTP status code sent."""
        self.requests.labels(route=route, method=method, status=f"{status // 100}xx").inc()
        self.seconds.labels(route=route).observe(seconds)

    def timed_out(self, scope: Scope) -> None:
        """Count one request whose request-reply got no answer in time (a 504)."""
        self.timeouts.labels(route=self.route_of(scope)).inc()


class Instrumented:
    """ASGI middleware: counts and times every HTTP request into `metrics` (added outermost,
    so the body limit's 413s are counted too)."""

    def __init__(self, app: ASGIApp, metrics: GatewayMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        route = self.metrics.route_of(scope)
        started = time.perf_counter()
        status = 500  # what the client gets when the app raises before answering

        async def observed(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, observed)
        finally:
            elapsed = time.perf_counter() - started
            self.metrics.answered(route, scope["method"], status, elapsed)
