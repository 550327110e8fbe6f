"""The gateway's strict inputs without a network (issue 13, part 3): every route parses JSON
with `StrictJsonRequest` (no NaN or Infinity), validation problems map to 422 when a value is
out of its range and 400 otherwise, and the OpenAPI document carries the ranges (what
schemathesis generates from)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import SecretStr

from schemas.bounds import MAX_TIME_MS
from schemas.jobs import MAX_BATCH, MAX_DAYS
from services.gateway import create_app
from services.gateway.errors import validation_message, validation_status
from services.gateway.limits import StrictJsonRoute, non_finite_path
from services.settings import Settings


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    return create_app(Settings(gateway_operator_keys=[SecretStr("k")])).openapi()


def api_routes(routes: list[Any]) -> list[APIRoute]:
    """The API routes, included routers walked into (FastAPI keeps them as included)."""
    found: list[APIRoute] = []
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            found += api_routes(included.routes)
        elif isinstance(route, APIRoute):
            found.append(route)
    return found


def test_every_api_route_parses_json_strictly() -> None:
    app = create_app(Settings(gateway_operator_keys=[SecretStr("k")]))
    # the operational probes (GET, no body, not in the document) and /healthz aside
    api = [r for r in api_routes(app.routes) if r.include_in_schema and r.path != "/healthz"]
    assert len(api) >= 35
    assert [r.path for r in api if not isinstance(r, StrictJsonRoute)] == []


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"a": 1, "b": [1, 2.5, {"c": NaN}]}', "b[2].c"),
        ('{"metadata": {"x": Infinity}}', "metadata.x"),
        ('{"a": -Infinity, "b": NaN}', "a"),  # the first in document order
        ('[{"x": 1e999}]', "[0].x"),
        ("NaN", "body"),
        ('{"a": 1.5, "b": [null, true, "NaN", 9007199254740993]}', None),
    ],
)
def test_non_finite_numbers_are_found_with_their_path(text: str, where: str | None) -> None:
    assert non_finite_path(json.loads(text)) == where


def test_the_walk_is_iterative() -> None:
    deep: Any = math.nan
    for _ in range(50_000):
        deep = [deep]
    assert non_finite_path(deep) == "[0]" * 50_000


def error(kind: str, *loc: str | int) -> RequestValidationError:
    return RequestValidationError([{"type": kind, "loc": ("body", *loc), "msg": "no"}])


@pytest.mark.parametrize(
    ("kind", "status"),
    [
        ("greater_than_equal", 422),
        ("greater_than", 422),
        ("less_than_equal", 422),
        ("finite_number", 422),
        ("int_from_float", 422),
        ("out_of_range", 422),
        ("int_parsing", 400),
        ("number_type", 400),
        ("missing", 400),
        ("json_invalid", 400),
        ("string_too_long", 400),
    ],
)
def test_a_value_out_of_range_is_422_anything_else_400(kind: str, status: int) -> None:
    assert validation_status(error(kind, "limit")) == status


def test_union_members_are_not_part_of_the_field_path() -> None:
    assert validation_message(error("less_than_equal", "step", "constrained-int")) == "step: no"
    message = validation_message(error("int_type", "messages", 0, "timestamp", "int"))
    assert message == "messages[0].timestamp: no"


def field(spec: dict[str, Any], model: str, name: str) -> dict[str, Any]:
    """The non-null member of a body field's schema."""
    schema = spec["components"]["schemas"][model]["properties"][name]
    members = [s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    return members[0]


@pytest.mark.parametrize(
    ("model", "name", "expected"),
    [
        ("ContextInput", "limit", {"type": "integer", "minimum": 1}),
        ("ContextInput", "maxItems", {"type": "integer", "minimum": 1}),
        ("ContextInput", "maxItemChars", {"type": "integer", "minimum": 1}),
        ("ContextInput", "maxContextCharacters", {"type": "integer", "minimum": 1}),
        ("BudgetInput", "maxCharacters", {"type": "integer", "minimum": 1}),
        ("ContextInput", "asOf", {"type": "integer", "minimum": 0, "maximum": MAX_TIME_MS}),
        ("LayerSearchInput", "limit", {"type": "integer", "minimum": 1}),
        ("TurnInput", "totalTokens", {"type": "integer", "minimum": 0}),  # alias tokenCount
        ("TurnInput", "contextWindow", {"type": "integer", "minimum": 0}),
        ("TurnInput", "occurredAt", {"type": "integer", "minimum": 0, "maximum": MAX_TIME_MS}),
        ("TranscriptInput", "totalTokens", {"type": "integer", "minimum": 0}),
        ("MessageInput", "timestamp", {"type": "integer", "minimum": 0, "maximum": MAX_TIME_MS}),
        ("ToolEventInput", "timestamp", {"type": "integer", "minimum": 0, "maximum": MAX_TIME_MS}),
        ("RememberInput", "confidence", {"type": "number", "minimum": 0, "maximum": 1}),
        ("RememberInput", "occurredAt", {"type": "integer", "minimum": 0, "maximum": MAX_TIME_MS}),
        ("ItemPatchInput", "confidence", {"type": "number", "minimum": 0, "maximum": 1}),
        ("KnowledgeInput", "occurredAt", {"type": "integer", "maximum": MAX_TIME_MS}),
        ("CheckpointInput", "occurredAt", {"type": "integer", "maximum": MAX_TIME_MS}),
        ("JobInput", "windowDays", {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_DAYS}),
        ("JobInput", "halfLifeDays", {"exclusiveMinimum": 0, "maximum": MAX_DAYS}),
        ("JobInput", "olderThanDays", {"exclusiveMinimum": 0, "maximum": MAX_DAYS}),
        ("JobInput", "batchSize", {"type": "integer", "minimum": 1, "maximum": MAX_BATCH}),
        ("TimeRange", "start", {"type": "integer", "minimum": 0, "maximum": MAX_TIME_MS}),
        ("EvalInput", "k", {"type": "integer", "minimum": 1, "maximum": 20}),
        ("RerankBody", "topK", {"type": "integer", "minimum": 1, "maximum": 100}),
    ],
)
def test_the_openapi_document_carries_each_range(
    spec: dict[str, Any], model: str, name: str, expected: dict[str, Any]
) -> None:
    schema = field(spec, model, name)
    assert {k: schema.get(k) for k in expected} == expected, schema


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/api/memory/patterns", "limit"),
        ("/api/memory/skills", "limit"),
        ("/api/memory/evals/runs", "limit"),
        ("/api/memory/workflows/reliability", "last"),
        ("/api/memory/{agentWallet}", "limit"),
    ],
)
def test_query_counts_have_a_minimum_of_one(spec: dict[str, Any], path: str, name: str) -> None:
    [param] = [p for p in spec["paths"][path]["get"]["parameters"] if p["name"] == name]
    schema = param["schema"]
    members = [s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    assert members[0]["minimum"] == 1, param
