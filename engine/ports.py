"""Ports: the I/O the engine needs, as Protocols named by role. Adapters live in
`engine.adapters` (Mongo, Redis, local ONNX embedder, in-memory for unit tests)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt

InputType = Literal["query", "document"]
Vector = npt.NDArray[np.float32]


class Embedder(Protocol):
    """Turns texts into unit-length vectors of a fixed dimension.

    `model` and `dimension` identify the vector space: they are stored on every row and are
    part of every embedding cache key. Returned rows are L2-normalised (cosine = dot product).
    """

    @property
    def model(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        """One vector per text, in input order."""
        ...
