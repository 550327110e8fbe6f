"""The base of the tests' embedders that wrap a real one (counting, slowing or failing it):
`model` and `dimension` are the wrapped embedder's; a subclass sets `inner` and writes
`embed`."""

from __future__ import annotations

from engine.ports import Embedder


class WrappedEmbedder:
    inner: Embedder

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def dimension(self) -> int:
        return self.inner.dimension
