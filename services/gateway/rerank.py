"""POST /rerank (reference §13.4): rank caller-supplied documents against a query.

Request-reply over `memory.rerank.v1`: the search group owns the reranker and its provider
credentials, which the gateway never holds. With a reranker configured its scores rank the
documents, and a provider failure is 502 (the reference's route was not fail-soft either);
without one, the memory layers' local relevance (embedder cosine and BM25) ranks them.
The route reads no tenant data, so it needs a credential but no `agentWallet`.
"""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from schemas.requests import (
    MAX_QUERY_CHARS,
    MAX_RERANK_DOCUMENT_CHARS,
    MAX_RERANK_DOCUMENTS,
    RerankReply,
)
from services.gateway.auth import Caller
from services.gateway.deps import Client
from services.gateway.errors import ERRORS, ApiError, ErrorBody
from services.gateway.limits import StrictJsonRoute

router = APIRouter(tags=["rerank"], responses=ERRORS, route_class=StrictJsonRoute)

UPSTREAM: dict[int | str, dict[str, object]] = {
    502: {"model": ErrorBody, "description": "The configured reranker provider failed."}
}


class RerankDocumentBody(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    content: str = Field(max_length=MAX_RERANK_DOCUMENT_CHARS)
    score: float | None = Field(
        default=None, allow_inf_nan=False, description="Your own score: breaks ties only."
    )


class RerankBody(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    documents: list[RerankDocumentBody] = Field(min_length=1, max_length=MAX_RERANK_DOCUMENTS)
    topK: int | None = Field(default=None, ge=1, le=100, description="Default: every document.")


class RerankedDocument(BaseModel):
    index: int = Field(description="Index into `documents`.")
    content: str
    score: float = Field(description="relevance + 1e-6 × your score; results sort by it.")
    relevance: float = Field(description="In [0, 1], higher is more relevant.")


class RerankResponse(BaseModel):
    results: list[RerankedDocument] = Field(description="Best first.")
    ranker: str = Field(description="`local`, or the reranker provider and model.")


def _results(reply: RerankReply) -> RerankResponse:
    if reply.upstream:
        raise ApiError(502, reply.error or "the reranker failed")
    if reply.error:
        raise ApiError(400, reply.error)
    return RerankResponse(
        results=[RerankedDocument(**r.model_dump()) for r in reply.results], ranker=reply.ranker
    )


@router.post("/rerank", response_model=RerankResponse, responses=UPSTREAM)
async def rerank(body: RerankBody, client: Client, caller: Caller) -> RerankResponse:
    """`{results: [{index, content, score, relevance}]}`, best first, at most `topK`."""
    reply = await client.rerank(
        body.query, [d.model_dump() for d in body.documents], top_k=body.topK
    )
    return _results(reply)
