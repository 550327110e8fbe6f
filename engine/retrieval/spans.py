"""The search's tracing port: a span per memory layer searched, and per step (the query's
embedding). The engine imports no tracing library; the service injects an implementation
(`services.stream.telemetry.LayerSpans`, on OpenTelemetry) when traces are on, and without one
the search runs exactly as before (no wrapper, no call)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol


class LayerSpans(Protocol):
    """Opens the span of one layer's search, or of one step of the search."""

    def layer(self, name: str) -> AbstractContextManager[object]: ...

    def step(self, name: str) -> AbstractContextManager[object]: ...
