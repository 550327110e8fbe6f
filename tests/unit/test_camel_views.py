"""The gateway's answers that are Kafka replies are those contracts' camelCase views
(`schemas.camel`): same fields, camelCase keys, nothing re-listed."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel

from schemas.camel import camel_view
from schemas.requests import (
    ContextItem,
    ContextReply,
    ContextUsage,
    LayerSearchReply,
    ReliabilityReply,
    RerankReply,
    RerankRequest,
    RerankResult,
)
from services.gateway.loop import context_response
from services.gateway.models import ContextResponse, LayerSearchResponse
from services.gateway.rerank import RerankBody, RerankResponse
from services.gateway.workflows import ReliabilityOut

VIEWS: list[tuple[type[BaseModel], type[BaseModel]]] = [
    (ContextReply, ContextResponse),
    (LayerSearchReply, LayerSearchResponse),
    (ReliabilityReply, ReliabilityOut),
    (RerankReply, RerankResponse),
    (RerankRequest, RerankBody),
]


@pytest.mark.parametrize(("contract", "view"), VIEWS)
def test_a_view_has_every_field_of_its_contract_under_its_camel_key(
    contract: type[BaseModel], view: type[BaseModel]
) -> None:
    assert issubclass(view, contract)
    for name in contract.model_fields:
        assert view.model_fields[name].alias == to_camel(name)


def test_the_context_answer_is_the_reply_in_camel_case_after_the_workflow() -> None:
    reply = ContextReply(
        context_id="ctx",
        prompt="p",
        items=[ContextItem(layer="vectors", text="t", id="i", score=0.5, created_at=7)],
        totals={"vectors": 1},
        context_usage=ContextUsage(
            characters=1,
            raw_characters=2,
            budget_characters=None,
            saved_characters_vs_raw=1,
            items=1,
        ),
        cached=True,
    )
    body = context_response(reply).model_dump(mode="json")
    assert list(body) == [
        "workflow",
        "contextId",
        "prompt",
        "items",
        "totals",
        "contextUsage",
        "omitted",
        "raw",
        "cached",
    ]
    assert body["items"] == [
        {"layer": "vectors", "text": "t", "id": "i", "score": 0.5, "source": None, "createdAt": 7}
    ]
    assert body["contextUsage"] == {
        "characters": 1,
        "rawCharacters": 2,
        "budgetCharacters": None,
        "savedCharactersVsRaw": 1,
        "items": 1,
    }


def test_a_view_answers_without_the_reply_error_fields() -> None:
    reply = RerankReply(results=[RerankResult(index=0, content="a", score=1.0, relevance=1.0)])
    body = camel_view(RerankResponse, reply).model_dump(mode="json")
    assert body == {
        "results": [{"index": 0, "content": "a", "score": 1.0, "relevance": 1.0}],
        "ranker": "",
    }


def test_an_http_body_takes_camel_case_keys_only() -> None:
    body = RerankBody.model_validate({"query": "q", "documents": [{"content": "a"}], "topK": 2})
    assert body.top_k == 2
    with pytest.raises(ValidationError):
        RerankBody.model_validate({"query": "q", "documents": [{"content": "a"}], "top_k": 2})
