"""The HTTP embedders against a real local HTTP server speaking Voyage's and OpenAI's
`/embeddings` protocol (reference §4.1): the request each sends, the reply's order restored,
unit vectors, batching, and every way a reply can be wrong raising `EmbeddingFailed`."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import httpx
import numpy as np
import pytest
from pydantic import SecretStr

from engine.adapters.embedding_cache import CachedEmbedder
from engine.adapters.http_embedder import HttpEmbedder, Style
from engine.adapters.memory import InMemoryQueryCache
from engine.errors import DependencyFailed, EmbeddingFailed
from services.endpoints import NotConfigured
from services.runtime import build_embedder
from services.settings import Settings
from tests.support.http_server import Provider, Received, Reply, Responder, closed_port

DIM = 4


def vector_for(text: str) -> list[float]:
    """A deterministic, not normalised vector: its length says which text it belongs to."""
    n = float(len(text))
    return [n, 1.0, 0.0, 2.0]


def answer(request: Received, *, reverse: bool = True) -> Reply:
    """A well-behaved server: one vector per input, listed in reverse order with indices."""
    texts = request.json()["input"]
    data = [{"embedding": vector_for(t), "index": i} for i, t in enumerate(texts)]
    return Reply(body={"object": "list", "data": data[::-1] if reverse else data, "model": "m"})


def embedder(
    client: httpx.AsyncClient, server: Provider, style: Style = "voyage", **kwargs: Any
) -> HttpEmbedder:
    settings: dict[str, Any] = {"api_key": "sk-test", "model": "voyage-4-large", "dimension": DIM}
    return HttpEmbedder(client, base_url=f"{server.url}/v1/", style=style, **{**settings, **kwargs})


def unit(values: list[float]) -> np.ndarray[Any, np.dtype[np.float32]]:
    array = np.asarray(values, dtype=np.float32)
    return array / np.linalg.norm(array)


async def test_voyage_sends_input_type_and_output_dimension_and_restores_the_order(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    server = provider(answer)
    texts = ["a", "bbb", "cc"]

    vectors = await embedder(client, server).embed(texts, "query")

    (request,) = server.received
    assert request.path == "/v1/embeddings"  # trailing slash of the base URL stripped
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.json() == {
        "input": texts,
        "model": "voyage-4-large",
        "input_type": "query",
        "output_dimension": DIM,
    }
    for text, vector in zip(texts, vectors, strict=True):
        assert vector.dtype == np.float32
        assert np.allclose(vector, unit(vector_for(text)))
        assert math.isclose(float(np.linalg.norm(vector)), 1.0, rel_tol=1e-6)


async def test_openai_style_sends_dimensions_and_no_input_type(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    server = provider(answer)
    await embedder(client, server, "openai", api_key="").embed(["x"], "document")

    (request,) = server.received
    assert "authorization" not in request.headers  # a local server without a key
    assert request.json() == {
        "input": ["x"],
        "model": "voyage-4-large",
        "encoding_format": "float",
        "dimensions": DIM,
    }


@pytest.mark.parametrize("style", ["voyage", "openai"])
async def test_a_fixed_size_model_is_not_sent_a_dimension(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient, style: Style
) -> None:
    server = provider(answer)
    await embedder(client, server, style, send_dimensions=False).embed(["x"], "document")

    body = server.received[0].json()
    assert "output_dimension" not in body
    assert "dimensions" not in body


async def test_texts_go_in_batches_in_order_and_no_texts_make_no_request(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    server = provider(answer)
    model = embedder(client, server, batch_size=3)
    texts = ["t" * n for n in range(1, 8)]

    vectors = await model.embed(texts, "document")
    assert await model.embed([], "document") == []

    assert [len(r.json()["input"]) for r in server.received] == [3, 3, 1]
    assert [r.json()["input"] for r in server.received][1] == texts[3:6]
    assert all(np.allclose(v, unit(vector_for(t))) for t, v in zip(texts, vectors, strict=True))


async def test_a_reply_without_indices_is_taken_in_order(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    def no_index(request: Received) -> Reply:
        return Reply(body={"data": [{"embedding": vector_for(t)} for t in request.json()["input"]]})

    server = provider(no_index)
    vectors = await embedder(client, server).embed(["a", "bb"], "document")
    assert np.allclose(vectors[1], unit(vector_for("bb")))


def data_of(*vectors: Any, indices: list[Any] | None = None) -> dict[str, Any]:
    marks = indices if indices is not None else list(range(len(vectors)))
    return {"data": [{"embedding": v, "index": i} for v, i in zip(vectors, marks, strict=True)]}


GOOD = [1.0, 0.0, 0.0, 0.0]

BAD_REPLIES = {
    "server error": (Reply(503, b"upstream overloaded, retry later"), "HTTP 503: upstream"),
    "not json": (Reply(200, b"<html>gateway</html>"), "not JSON"),
    "no data": (Reply(body={"object": "list"}), "got no in `data`"),
    "a list": (Reply(body=[GOOD, GOOD]), "got no in `data`"),
    "too few": (Reply(body=data_of(GOOD)), "asked for 2 vectors, got 1"),
    "too many": (Reply(body=data_of(GOOD, GOOD, GOOD)), "asked for 2 vectors, got 3"),
    "repeated index": (Reply(body=data_of(GOOD, GOOD, indices=[1, 1])), "answered twice"),
    "index out of range": (Reply(body=data_of(GOOD, GOOD, indices=[0, 2])), "index 2"),
    "boolean index": (Reply(body=data_of(GOOD, GOOD, indices=[False, 1])), "index False"),
    "item not an object": (Reply(body={"data": [GOOD, GOOD]}), "not an object"),
    "wrong dimension": (Reply(body=data_of(GOOD, [1.0, 0.0])), "has 2 components, not 4"),
    "no vector": (Reply(body=data_of(GOOD, None)), "has NoneType components"),
    "string component": (Reply(body=data_of(GOOD, [1.0, "0", 0.0, 0.0])), "non-finite"),
    "boolean component": (Reply(body=data_of(GOOD, [True, 0.0, 0.0, 0.0])), "non-finite"),
    "overflowing component": (
        Reply(body=data_of(GOOD, [1e300, 0.0, 0.0, 0.0])),
        "outside the float32 range",
    ),
    "zero vector": (Reply(body=data_of(GOOD, [0.0, 0.0, 0.0, 0.0])), "no direction"),
}


@pytest.mark.parametrize("case", sorted(BAD_REPLIES))
async def test_every_untrustworthy_reply_raises_embedding_failed(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient, case: str
) -> None:
    reply, message = BAD_REPLIES[case]
    server = provider(lambda _: reply)

    with pytest.raises(EmbeddingFailed, match="embeddings:voyage-4-large") as raised:
        await embedder(client, server).embed(["a", "b"], "document")

    assert message in str(raised.value)
    assert isinstance(raised.value, DependencyFailed)  # retried, then dead-lettered


async def test_a_slow_server_and_a_closed_port_raise_embedding_failed(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    slow = provider(lambda request: Reply(body=answer(request).body, delay_s=1.0))
    with pytest.raises(EmbeddingFailed, match=r"timed out after 0\.2s"):
        await embedder(client, slow, timeout=0.2).embed(["a"], "query")

    gone = HttpEmbedder(
        client, base_url=f"http://127.0.0.1:{closed_port()}", api_key="", model="m", dimension=DIM
    )
    with pytest.raises(EmbeddingFailed, match="ConnectError"):
        await gone.embed(["a"], "query")


async def test_the_cache_keeps_a_second_call_off_the_wire(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    server = provider(answer)
    cached = CachedEmbedder(embedder(client, server), InMemoryQueryCache(), ttl_seconds=60)

    first = await cached.embed(["a", "bb"], "query")
    second = await cached.embed(["bb", "a"], "query")

    assert len(server.received) == 1
    assert np.allclose(first[0], second[1])
    assert np.allclose(first[1], second[0])


async def test_the_runtime_builds_the_configured_http_embedder(client: httpx.AsyncClient) -> None:
    settings = Settings(
        embedder="openai",
        embedding_base_url="http://127.0.0.1:9/v1",
        embedding_api_key=SecretStr("sk-secret"),
        embedding_model="text-embedding-3-small",
        embedding_dimensions=512,
    )
    built = build_embedder(settings, client)

    assert isinstance(built, HttpEmbedder)
    assert (built.model, built.dimension) == ("text-embedding-3-small", 512)
    assert "sk-secret" not in repr(settings)


async def test_an_http_embedder_without_a_base_url_is_a_configuration_error(
    client: httpx.AsyncClient,
) -> None:
    with pytest.raises(NotConfigured, match="MNEMOSTREAM_EMBEDDING_BASE_URL"):
        build_embedder(Settings(embedder="voyage"), client)
