"""Patterns and skills (reference §9, §13.3), request-reply over `memory.admin.v1`.

Reads see the scope's own patterns plus the agent's user-less ones; promotion acts on the
scope's own patterns only. Differences from the reference: validating an unknown pattern is
404 (not an all-zero result), and promotion recomputes validation from the stored counts
(the body's `validationData` is ignored, §16.19) and is idempotent (one skill per pattern);
an invalid pattern answers 200 with `promoted: false, status: "invalid"`.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from schemas.admin import (
    PatternResponse,
    PatternsResponse,
    PromotionResponse,
    SkillResponse,
    SkillsResponse,
    ValidationResponse,
)
from schemas.bodies import ScopeInput
from schemas.operation_input import PromoteInput
from services.gateway.auth import Caller
from services.gateway.deps import Client, QueryScope, admin_result, at_most, input_scope
from services.gateway.errors import ERRORS, NOT_FOUND
from services.gateway.limits import StrictJsonRoute

router = APIRouter(tags=["patterns"], responses=ERRORS, route_class=StrictJsonRoute)

Id = Annotated[str, Path(min_length=1, max_length=200)]
LimitQuery = Annotated[int, Query(ge=1, description="Default 20, at most 100 (lowered to it).")]


@router.get("/patterns", response_model=PatternsResponse)
async def list_patterns(
    client: Client,
    scope: QueryScope,
    pattern_type: Annotated[str | None, Query(alias="patternType", max_length=64)] = None,
    min_success_rate: Annotated[float | None, Query(alias="minSuccessRate", ge=0, le=1)] = None,
    limit: LimitQuery = 20,
) -> PatternsResponse:
    """`{patterns}`: success rate↓, executions↓, last executed↓."""
    reply = await client.admin(
        "patterns.list",
        scope,
        limit=at_most(limit, 20, 100),
        pattern_type=pattern_type,
        min_success_rate=min_success_rate,
    )
    return admin_result(reply, PatternsResponse)


@router.get("/patterns/{id}", response_model=PatternResponse, responses=NOT_FOUND)
async def get_pattern(
    id: Id,
    client: Client,
    scope: QueryScope,
) -> PatternResponse:
    """`{pattern}`."""
    reply = await client.admin("patterns.get", scope, id=id)
    return admin_result(reply, PatternResponse)


@router.post("/patterns/{id}/validate", response_model=ValidationResponse, responses=NOT_FOUND)
async def validate_pattern(
    id: Id,
    body: ScopeInput,
    client: Client,
    caller: Caller,
) -> ValidationResponse:
    """reference §9.2: `{valid, confidence, occurrences, successRate, toolSequence}`."""
    scope = input_scope(caller, body)
    reply = await client.admin("patterns.validate", scope, id=id)
    return admin_result(reply, ValidationResponse)


@router.post("/patterns/{id}/promote", response_model=PromotionResponse, responses=NOT_FOUND)
async def promote_pattern(
    id: Id,
    body: PromoteInput,
    client: Client,
    caller: Caller,
) -> PromotionResponse:
    """Promote a valid pattern to a skill: `{skillId, promoted, status, validation, skill}`."""
    scope = input_scope(caller, body)
    reply = await client.admin("patterns.promote", scope, id=id, name=body.name())
    return admin_result(reply, PromotionResponse)


@router.get("/skills", response_model=SkillsResponse)
async def list_skills(
    client: Client,
    scope: QueryScope,
    category: Annotated[str | None, Query(max_length=64)] = None,
    limit: LimitQuery = 20,
) -> SkillsResponse:
    """`{skills}`: success rate↓, usage↓, created↓."""
    reply = await client.admin(
        "skills.list", scope, limit=at_most(limit, 20, 100), category=category
    )
    return admin_result(reply, SkillsResponse)


@router.get("/skills/{id}", response_model=SkillResponse, responses=NOT_FOUND)
async def get_skill(
    id: Id,
    client: Client,
    scope: QueryScope,
) -> SkillResponse:
    """`{skill}`."""
    reply = await client.admin("skills.get", scope, id=id)
    return admin_result(reply, SkillResponse)
