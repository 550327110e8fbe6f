"""The base of the tests' embedders that wrap a real one (counting, slowing or failing it):
`model` and `dimension` are the wrapped embedder's; a subclass sets `inner` and writes
`embed`."""

from __future__ import annotations

from collections.abc import Sequence

from engine.ports import Embedder, InputType, Vector


class WrappedEmbedder:
    inner: Embedder

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def dimension(self) -> int:
        return self.inner.dimension


class CallLog(WrappedEmbedder):
    """Records every call's texts (a model call each)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        self.calls.append(list(texts))
        return await self.inner.embed(texts, input_type)
