"""HTTP `Reranker` adapters: Cloudflare Workers AI and Cohere/Voyage/Jina-style `/rerank`.

The `httpx.AsyncClient` is built and closed by the composition root; adapters only use it.
Each call has its own deadline (`timeout` seconds, the whole exchange). Every failure —
transport error, timeout, a non-2xx HTTP status, `success: false`, a body that is not the
provider's JSON shape, or a reply without one usable score — raises `DependencyFailed`.

Scores. Cross-encoders such as bge-reranker emit unbounded logits; the Workers AI model page
for `@cf/baai/bge-reranker-base` documents only `{id, score}` and says the score "can be
mapped to a float value in [0,1] by sigmoid function", and client code in the wild handles
both raw logits and probabilities. Cohere, Voyage and Jina document `relevance_score` in
[0, 1]. So: when every score of a reply is in [0, 1] the scores are used as they are;
when any is outside, the whole reply is treated as logits and mapped through the logistic
sigmoid (which keeps the order).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

import httpx

from engine.adapters.http import post_json
from engine.errors import DependencyFailed

CLOUDFLARE_BASE_URL = "https://api.cloudflare.com/client/v4"
CLOUDFLARE_MODEL = "@cf/baai/bge-reranker-base"
DEFAULT_TIMEOUT_S = 3.0
_ERROR_BODY_CHARS = 200


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)  # the other branch would overflow for large negative logits
    return z / (1.0 + z)


def _as_probabilities(scores: dict[int, float]) -> dict[int, float]:
    if all(0.0 <= s <= 1.0 for s in scores.values()):
        return scores
    return {i: _sigmoid(s) for i, s in scores.items()}


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    as_float = float(value)
    return as_float if math.isfinite(as_float) else None


def _index(value: object, count: int) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value < count else None


def _collect(
    provider: str,
    items: object,
    count: int,
    index_key: str,
    score_keys: Sequence[str],
) -> dict[int, float]:
    """Index → probability from a list of result objects; the first entry for an index wins."""
    if not isinstance(items, list):
        raise DependencyFailed(f"{provider}: malformed reply (no result list)")
    scores: dict[int, float] = {}
    for item in items:
        if not isinstance(item, Mapping):
            continue
        index = _index(item.get(index_key), count)
        score = next((s for s in (_number(item.get(k)) for k in score_keys) if s is not None), None)
        if index is not None and score is not None and index not in scores:
            scores[index] = score
    if not scores:
        raise DependencyFailed(f"{provider}: reply has no usable score")
    return _as_probabilities(scores)


def _texts(documents: Sequence[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """(ids, texts) of the documents worth sending: providers reject empty texts, and an
    empty text gets no score (the hit keeps its own)."""
    kept = [(doc_id, text) for doc_id, text in documents if text.strip()]
    return [d for d, _ in kept], [t for _, t in kept]


class CloudflareReranker:
    """Workers AI `@cf/baai/bge-reranker-base` (or another model of that input schema).

    `POST {base_url}/accounts/{account_id}/ai/run/{model}` with
    `{"query", "contexts": [{"text"}], "top_k": n}` and a Bearer token; the reply is
    `{"success": true, "result": {"response": [{"id": <index into contexts>, "score"}]}}`.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        account_id: str,
        api_token: str,
        model: str = CLOUDFLARE_MODEL,
        timeout: float = DEFAULT_TIMEOUT_S,
        base_url: str = CLOUDFLARE_BASE_URL,
    ) -> None:
        self.name = f"cloudflare:{model}"
        self._client = client
        self._url = (
            f"{base_url.rstrip('/')}/accounts/{quote(account_id, safe='')}"
            f"/ai/run/{quote(model, safe='/@')}"
        )
        self._headers = {"Authorization": f"Bearer {api_token}"}
        self._timeout = timeout

    async def rerank(self, query: str, documents: Sequence[tuple[str, str]]) -> dict[str, float]:
        """Id → relevance in [0, 1]; see `engine.ports.Reranker.rerank`."""
        ids, texts = _texts(documents)
        if not ids:
            return {}
        body = {
            "query": query,
            "contexts": [{"text": t} for t in texts],
            "top_k": len(texts),
        }
        reply = await post_json(
            self._client, self.name, self._url, body, self._headers, self._timeout
        )
        if not isinstance(reply, Mapping):
            raise DependencyFailed(f"{self.name}: malformed reply (not an object)")
        if reply.get("success") is False:
            raise DependencyFailed(f"{self.name}: success=false: {_cloudflare_errors(reply)}")
        result = reply.get("result")
        items = result.get("response") if isinstance(result, Mapping) else None
        scores = _collect(self.name, items, len(ids), "id", ("score",))
        return {ids[i]: s for i, s in scores.items()}


def _cloudflare_errors(reply: Mapping[str, Any]) -> str:
    errors = reply.get("errors")
    if not isinstance(errors, list):
        return "no error detail"
    messages = [str(e.get("message", e)) if isinstance(e, Mapping) else str(e) for e in errors]
    return "; ".join(messages)[:_ERROR_BODY_CHARS] or "no error detail"


class HttpRerankReranker:
    """A Cohere-style `/rerank` endpoint (Cohere v1/v2, Jina, Voyage, TEI-compatible servers).

    `POST url` with `{"model", "query", "documents": [text, ...], top_field: n}` and a Bearer
    key (no Authorization header when `api_key` is empty, for local servers). The reply's list
    is `results` (Cohere, Jina) or `data` (Voyage) of `{"index", "relevance_score"}`
    (`"score"` is accepted too). `top_field` is `"top_n"` for Cohere and Jina, `"top_k"` for
    Voyage, or None to leave it out (all three then score every document).
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        url: str,
        api_key: str,
        model: str,
        timeout: float = DEFAULT_TIMEOUT_S,
        top_field: str | None = "top_n",
    ) -> None:
        self.name = f"rerank:{model}"
        self._client = client
        self._url = url
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._model = model
        self._timeout = timeout
        self._top_field = top_field

    async def rerank(self, query: str, documents: Sequence[tuple[str, str]]) -> dict[str, float]:
        """Id → relevance in [0, 1]; see `engine.ports.Reranker.rerank`."""
        ids, texts = _texts(documents)
        if not ids:
            return {}
        body: dict[str, Any] = {"model": self._model, "query": query, "documents": texts}
        if self._top_field:
            body[self._top_field] = len(texts)
        reply = await post_json(
            self._client, self.name, self._url, body, self._headers, self._timeout
        )
        if not isinstance(reply, Mapping):
            raise DependencyFailed(f"{self.name}: malformed reply (not an object)")
        items = reply.get("results", reply.get("data"))
        scores = _collect(self.name, items, len(ids), "index", ("relevance_score", "score"))
        return {ids[i]: s for i, s in scores.items()}
