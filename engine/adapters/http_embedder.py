"""HTTP `Embedder`s: Voyage (directly, or through MongoDB's AI gateway as the reference does,
reference §4.1) and OpenAI-compatible `/embeddings` servers (OpenAI, vLLM, TEI, Ollama, ...).

Both `POST <base_url>/embeddings` with `{"input": [text, ...], "model": ...}` and a Bearer key
(no Authorization header when the key is empty, for local servers), and both answer
`{"data": [{"embedding": [...], "index": i}, ...]}`. They differ in two fields:

- Voyage sends `input_type` (`query` for searches, `document` for what is stored) and
  `output_dimension`;
- OpenAI-compatible servers have no input type and take `dimensions` (sent only when asked:
  not every server or model accepts it).

There is no fallback (reference §4.1, docs/architecture.md#dependencies: never another vector
space). Every failure
raises `EmbeddingFailed`, a `DependencyFailed`: a consumer retries the message with backoff and
then dead-letters it; a search request answers with the error. Failures are a transport error,
a timeout (one deadline for the whole exchange), a non-2xx status (with the first 300
characters of the body), a body that is not JSON, and a reply that cannot be trusted: `data`
missing or of the wrong length, an index missing, repeated or out of range, a vector of another
dimension, a component that is not a finite number (or too large for float32), a zero
vector.

Rows are L2-normalised here (the port's contract: cosine = dot product) whatever the server
returns. Texts go in batches of at most `batch_size`, in order, one request at a time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import httpx
import numpy as np

from engine.adapters.http import post_json
from engine.errors import DependencyFailed, EmbeddingFailed
from engine.ports import InputType, Vector

Style = Literal["voyage", "openai"]

DEFAULT_TIMEOUT_S = 8.0  # the reference's MEMORY_EMBEDDING_TIMEOUT_MS
DEFAULT_BATCH_SIZE = 128  # Voyage takes up to 1,000 texts a request; OpenAI up to 2,048
_FLOAT32_MAX = float(np.finfo(np.float32).max)


class HttpEmbedder:
    """One embeddings API; `model` and `dimension` name the vector space stored on each row."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        base_url: str,
        api_key: str,
        model: str,
        dimension: int,
        style: Style = "voyage",
        send_dimensions: bool = True,
        timeout: float = DEFAULT_TIMEOUT_S,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        """`send_dimensions`: ask the server for `dimension` (`output_dimension` for Voyage,
        `dimensions` for OpenAI); off for models with a fixed size. The reply is checked
        against `dimension` either way."""
        if dimension < 1:
            raise ValueError(f"dimension must be >= 1, got {dimension}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.name = f"embeddings:{model}"
        self._client = client
        self._url = f"{base_url.rstrip('/')}/embeddings"
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._model = model
        self._dimension = dimension
        self._style = style
        self._send_dimensions = send_dimensions
        self._timeout = timeout
        self._batch_size = batch_size

    @property
    def model(self) -> str:
        return self._model

    @property
    def dimension(self) -> int:
        return self._dimension

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        """One unit vector per text, in input order; `EmbeddingFailed` on any failure."""
        vectors: list[Vector] = []
        for start in range(0, len(texts), self._batch_size):
            vectors += await self._batch(list(texts[start : start + self._batch_size]), input_type)
        return vectors

    def _body(self, texts: list[str], input_type: InputType) -> dict[str, Any]:
        body: dict[str, Any] = {"input": texts, "model": self._model}
        if self._style == "voyage":
            body["input_type"] = input_type
            if self._send_dimensions:
                body["output_dimension"] = self._dimension
        else:
            body["encoding_format"] = "float"
            if self._send_dimensions:
                body["dimensions"] = self._dimension
        return body

    async def _batch(self, texts: list[str], input_type: InputType) -> list[Vector]:
        try:
            reply = await post_json(
                self._client,
                self.name,
                self._url,
                self._body(texts, input_type),
                self._headers,
                self._timeout,
            )
        except DependencyFailed as exc:
            raise EmbeddingFailed(str(exc)) from exc
        return self._vectors(reply, len(texts))

    def _vectors(self, reply: Any, count: int) -> list[Vector]:
        data = reply.get("data") if isinstance(reply, Mapping) else None
        if not isinstance(data, list) or len(data) != count:
            got = len(data) if isinstance(data, list) else "no"
            raise EmbeddingFailed(f"{self.name}: asked for {count} vectors, got {got} in `data`")
        ordered: list[Vector | None] = [None] * count
        for position, item in enumerate(data):
            if not isinstance(item, Mapping):
                raise EmbeddingFailed(f"{self.name}: data[{position}] is not an object")
            index = item.get("index", position)
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
                raise EmbeddingFailed(f"{self.name}: data[{position}] has index {index!r}")
            if ordered[index] is not None:
                raise EmbeddingFailed(f"{self.name}: index {index} is answered twice")
            ordered[index] = self._unit(item.get("embedding"), index)
        return [v for v in ordered if v is not None]  # all set: count items, distinct indices

    def _unit(self, values: Any, index: int) -> Vector:
        if not isinstance(values, list) or len(values) != self._dimension:
            size = len(values) if isinstance(values, list) else type(values).__name__
            raise EmbeddingFailed(
                f"{self.name}: vector {index} has {size} components, not {self._dimension}"
            )
        if not all(
            isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
            for x in values
        ):
            raise EmbeddingFailed(f"{self.name}: vector {index} has a non-finite component")
        vector = np.asarray(values, dtype=np.float64)
        if float(np.max(np.abs(vector))) > _FLOAT32_MAX:
            raise EmbeddingFailed(f"{self.name}: vector {index} is outside the float32 range")
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:
            raise EmbeddingFailed(f"{self.name}: vector {index} has no direction (norm 0)")
        return (vector / norm).astype(np.float32)
