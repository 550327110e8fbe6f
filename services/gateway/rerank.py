"""POST /rerank (reference §13.4): rank caller-supplied documents against a query.

Request-reply over `memory.rerank.v1`: the search group owns the reranker and its provider
credentials, which the gateway never holds. With a reranker configured its scores rank the
documents, and a provider failure is 502 (the reference's route was not fail-soft either);
without one, the memory layers' local relevance (embedder cosine and BM25) ranks them.
The route reads no tenant data, so it needs a credential but no `agentWallet`.
"""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import Field

from schemas.camel import CAMEL, camel_view
from schemas.requests import (
    MAX_RERANK_DOCUMENTS,
    RerankDocument,
    RerankReply,
    RerankRequest,
    RerankResult,
)
from services.gateway.auth import Caller
from services.gateway.deps import Client
from services.gateway.errors import ERRORS, ApiError, ErrorBody
from services.gateway.limits import StrictJsonRoute

router = APIRouter(tags=["rerank"], responses=ERRORS, route_class=StrictJsonRoute)

UPSTREAM: dict[int | str, dict[str, object]] = {
    502: {"model": ErrorBody, "description": "The configured reranker provider failed."}
}


class RerankDocumentBody(RerankDocument):
    model_config = CAMEL


class RerankBody(RerankRequest):
    """`RerankRequest` in camelCase (`topK`)."""

    model_config = CAMEL

    # the list of each document's camelCase view (the body is frozen: never appended to)
    documents: list[RerankDocumentBody] = Field(  # type: ignore[assignment]
        min_length=1, max_length=MAX_RERANK_DOCUMENTS
    )


class RerankedDocument(RerankResult):
    model_config = CAMEL


class RerankResponse(RerankReply):
    """The search group's `RerankReply` in camelCase, without its error fields."""

    model_config = CAMEL

    results: list[RerankedDocument] = Field(  # type: ignore[assignment]
        description="Best first."
    )
    upstream: bool = Field(default=False, exclude=True)
    error: None = Field(default=None, exclude=True)


def _results(reply: RerankReply) -> RerankResponse:
    if reply.upstream:
        raise ApiError(502, reply.error or "the reranker failed")
    if reply.error:
        raise ApiError(400, reply.error)
    return camel_view(RerankResponse, reply)


@router.post("/rerank", response_model=RerankResponse, responses=UPSTREAM)
async def rerank(body: RerankBody, client: Client, caller: Caller) -> RerankResponse:
    """`{results: [{index, content, score, relevance}]}`, best first, at most `topK`."""
    reply = await client.rerank(
        body.query, [d.model_dump() for d in body.documents], top_k=body.top_k
    )
    return _results(reply)
