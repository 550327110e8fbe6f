"""The admin operations, one function per `AdminOp` (`OPERATIONS`), and the camelCase JSON
views of their results. Every operation stays inside the request's scope (see the group's
router, `services.groups.admin`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from engine.errors import InputRejected, NotFound
from engine.ingest.patterns import (
    PATTERN_TAGS,
    PATTERN_TYPE,
    TRIGGER_TYPE,
    PatternState,
    Validation,
    validate,
)
from engine.ingest.skill_view import skill_view
from engine.ingest.skills import Skill, promote
from engine.records import ScopeFields
from engine.scoping import tenant_filter
from engine.upkeep.jobs import JobRecord
from schemas.jobs import job_agents
from schemas.requests import AdminRequest
from schemas.scope import Scope
from services.groups.admin import evals
from services.groups.admin.browse import graph_browse, memory_browse
from services.groups.admin.export import memory_export
from services.groups.jobs.archive_pins import sync_archive
from services.runtime import Runtime

log = logging.getLogger(__name__)

Result = dict[str, Any]


def _now() -> int:
    return int(time.time() * 1000)


def _scope_json(scope: ScopeFields) -> Result:
    return {
        "agentWallet": scope.agent_wallet,
        "userAddress": scope.user_address,
        "mode": scope.mode,
        "haiId": scope.hai_id,
    }


def pattern_json(p: PatternState) -> Result:
    """A pattern as reference §2.4 shows it, plus `successCount` (success is measured) and
    `unknownCount` (runs that reported no outcome; `successRate` is over the others)."""
    return {
        "patternId": p.pattern_id,
        **_scope_json(p.scope),
        "patternType": PATTERN_TYPE,
        "trigger": {"type": TRIGGER_TYPE, "value": p.steps[0] if p.steps else None},
        "steps": [{"action": s, "order": i} for i, s in enumerate(p.steps)],
        "summary": p.summary,
        "successRate": p.success_rate,
        "executionCount": p.executions,
        "successCount": p.successes,
        "unknownCount": p.unknown,
        "lastExecuted": p.last_executed,
        "createdAt": p.created_at,
        "status": p.status,
        "metadata": {"tags": list(PATTERN_TAGS)},
    }


def skill_json(s: Skill) -> Result:
    """A skill as reference §9.3 shows it (the stored document without `_id`)."""
    return skill_view(s)


def validation_json(v: Validation) -> Result:
    """reference §9.2: `{valid, confidence, occurrences, successRate, toolSequence}`."""
    return {
        "valid": v.valid,
        "confidence": v.confidence,
        "occurrences": v.occurrences,
        "successRate": v.success_rate,
        "toolSequence": list(v.tool_sequence),
    }


def job_json(j: JobRecord) -> Result:
    """A job record (reference §10.6): `data` is the job's result, `error` its last error."""
    agents = job_agents(j.params)
    return {
        "jobId": j.job_id,
        "type": j.type,
        "status": j.status,
        "agentWallet": agents[0] if len(agents) == 1 else None,
        "params": j.params,
        "createdAt": j.created_at,
        "completedAt": j.completed_at,
        "attempts": j.attempts,
        "data": j.result,
        "error": j.error,
        "errorType": j.error_type,
    }


def _scope(request: AdminRequest) -> Scope:
    if request.scope is None:
        raise InputRejected("agentWallet is required")
    return request.scope


def _id(request: AdminRequest) -> str:
    if request.id is None:
        raise InputRejected("id is required")
    return request.id


async def _patterns_list(rt: Runtime, request: AdminRequest) -> Result:
    where = tenant_filter(_scope(request), durable=True, shared=True)
    found = await rt.patterns.list(where, request.limit)
    if request.pattern_type is not None and request.pattern_type != PATTERN_TYPE:
        found = []
    if request.min_success_rate is not None:
        found = [p for p in found if p.success_rate >= request.min_success_rate]
    return {"patterns": [pattern_json(p) for p in found]}


async def _pattern(rt: Runtime, request: AdminRequest) -> PatternState:
    where = tenant_filter(_scope(request), durable=True, shared=True)
    state = await rt.patterns.get(where, _id(request))
    if state is None:
        raise NotFound(f"no pattern {request.id} in this scope")
    return state


async def _patterns_get(rt: Runtime, request: AdminRequest) -> Result:
    return {"pattern": pattern_json(await _pattern(rt, request))}


async def _patterns_validate(rt: Runtime, request: AdminRequest) -> Result:
    return validation_json(validate(await _pattern(rt, request)))


async def _patterns_promote(rt: Runtime, request: AdminRequest) -> Result:
    where = tenant_filter(_scope(request), durable=True)
    if request.name is None:
        raise InputRejected("skillName is required")
    done = await promote(rt.patterns, rt.skills, where, _id(request), request.name, at=_now())
    return {
        "skillId": done.skill.skill_id if done.skill else None,
        "promoted": done.promoted,
        "status": done.status,
        "validation": validation_json(done.validation),
        "skill": skill_json(done.skill) if done.skill else None,
    }


async def _skills_list(rt: Runtime, request: AdminRequest) -> Result:
    where = tenant_filter(_scope(request), durable=True, shared=True)
    found = await rt.skills.list(where, request.limit)
    if request.category is not None:
        found = [s for s in found if s.category == request.category]
    return {"skills": [skill_json(s) for s in found]}


async def _skills_get(rt: Runtime, request: AdminRequest) -> Result:
    where = tenant_filter(_scope(request), durable=True, shared=True)
    skill = await rt.skills.get(where, _id(request))
    if skill is None:
        raise NotFound(f"no skill {request.id} in this scope")
    return {"skill": skill_json(skill)}


async def _jobs_get(rt: Runtime, request: AdminRequest) -> Result:
    record = await rt.jobs.get(_id(request))
    if record is None or (
        request.scope is not None and request.scope.agent_wallet not in job_agents(record.params)
    ):
        raise NotFound(f"no job {request.id}")
    return job_json(record)


async def _jobs_list(rt: Runtime, request: AdminRequest) -> Result:
    agent = request.scope.agent_wallet if request.scope is not None else None
    found = await rt.jobs.recent(agent=agent, status=request.status, limit=request.limit)
    return {"jobs": [job_json(record) for record in found]}


async def _stats(rt: Runtime, request: AdminRequest) -> Result:
    scope = _scope(request)
    agent, user = scope.agent_wallet, scope.user_address
    vectors = await rt.memory.stats(agent, user)
    return {
        "agentWallet": agent,
        "userAddress": user,
        "totalVectors": vectors.total,
        "totalTranscripts": await rt.transcripts.count(agent, user),
        "avgDecayScore": vectors.avg_decay_score,
        "oldestVector": vectors.oldest,
        "newestVector": vectors.newest,
        "byType": dict(vectors.by_source),
    }


async def _evals_run(rt: Runtime, request: AdminRequest) -> Result:
    return await evals.run_eval(rt, request.body or {}, _now())


async def _evals_get(rt: Runtime, request: AdminRequest) -> Result:
    run = await evals.get_eval(rt, _id(request), _scope(request).agent_wallet)
    if run is None:
        raise NotFound(f"no eval run {request.id}")
    return run


async def _evals_list(rt: Runtime, request: AdminRequest) -> Result:
    return {"runs": await evals.list_evals(rt, _scope(request).agent_wallet, request.limit)}


async def _archives_sync(rt: Runtime, request: AdminRequest) -> Result:
    scope = _scope(request)
    return await sync_archive(rt, _id(request), scope.agent_wallet, scope.user_address)


OPERATIONS: dict[str, Callable[[Runtime, AdminRequest], Awaitable[Result]]] = {
    "patterns.list": _patterns_list,
    "patterns.get": _patterns_get,
    "patterns.validate": _patterns_validate,
    "patterns.promote": _patterns_promote,
    "skills.list": _skills_list,
    "skills.get": _skills_get,
    "jobs.get": _jobs_get,
    "jobs.list": _jobs_list,
    "stats": _stats,
    "evals.run": _evals_run,
    "evals.get": _evals_get,
    "evals.list": _evals_list,
    "archives.sync": _archives_sync,
    "memory.browse": memory_browse,
    "graph.browse": graph_browse,
    "memory.export": memory_export,
}
"""Every `AdminOp`, bound to the engine call that answers it."""
