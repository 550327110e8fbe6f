"""A deterministic offline `Embedder` for unit tests."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from engine.ports import InputType, Vector

_WORD = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    """A real, deterministic bag-of-words embedder (signed feature hashing of words and
    character trigrams, L2-normalised). Fast and offline; meant for unit tests, where the
    ONNX model's load time and CPU cost would dominate."""

    def __init__(self, dimension: int = 256) -> None:
        self._dimension = dimension

    @property
    def model(self) -> str:
        return f"hashing-bow-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def vector(self, text: str) -> Vector:
        """The vector of one text (synchronous: it is pure CPU work)."""
        vec = np.zeros(self._dimension, dtype=np.float32)
        words = _WORD.findall(text.lower())
        features = words + [w[i : i + 3] for w in words if len(w) > 3 for i in range(len(w) - 2)]
        for feature in features:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self._dimension
            vec[index] += 1.0 if digest[4] & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0 else vec

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        return [self.vector(text) for text in texts]
