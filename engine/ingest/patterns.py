"""Procedural patterns learned from tool outcomes, and their promotion to skills.

A turn's tool calls, ordered by time, form a *sequence*; every turn with the same sequence
in the same tenant (agent, user, mode, hai) counts one *execution* of one pattern, and a
*success* when every call in it succeeded. Counting is idempotent per turn id, so a
redelivered or replayed `TurnRecorded` never counts twice.

Fixes of the reference (reference §9, §16.4, §16.19):
* success comes from the tools' outcomes, not from frequency;
* the counter never puts a field in both `$set` and `$setOnInsert` (the reference's write
  always failed on that path conflict);
* `pattern_id` hashes the whole tenant and the whole sequence (the reference used 8 chars
  of the wallet, so agents sharing them overwrote each other's patterns);
* promotion re-validates from the stored counts (never from data the caller sends) and is
  idempotent: one pattern gives at most one skill.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from engine.errors import InputRejected, NotFound
from engine.records import (
    ACTIVE,
    PatternRecord,
    ScopeFields,
    StoredMessage,
    Transcript,
    Vector,
)
from engine.scoping import TenantFilter, scope_fields
from schemas.events import TurnRecorded

PATTERN_TYPE = "tool_sequence"
TRIGGER_TYPE = "context"
PATTERN_TAGS = ("tool-sequence", "learned")
SKILL_TAGS = ("auto-promoted", "pattern")

SUCCESS_STATUSES = frozenset(
    {"completed", "complete", "success", "succeeded", "successful", "ok", "done"}
)
"""Tool statuses that count as success (case-insensitive). Every other status (failed,
error, timeout, cancelled, pending, …) counts as failure: an unfinished call did not work."""

MIN_EXECUTIONS = 2
MIN_SUCCESS_RATE = 0.55
MIN_CONFIDENCE = 0.2
FULL_CONFIDENCE_EXECUTIONS = 10
"""reference §9.2: confidence = min(1, executions / 10 × success rate)."""

TURN_IDS_KEPT = 500
"""Turn ids remembered per pattern for idempotency (an older redelivery would count again)."""


def h32(text: str) -> str:
    """reference §0 `H32`: the first 32 hex characters of SHA-256 of the UTF-8 text."""
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class ToolStep:
    name: str
    succeeded: bool


def succeeded(status: str) -> bool:
    return status.strip().lower() in SUCCESS_STATUSES


def tool_sequence(event: TurnRecorded) -> list[ToolStep]:
    """The turn's tool calls ordered by timestamp (ties keep their order in the event);
    empty when the turn called no tool (then there is no pattern)."""
    ordered = sorted(event.tool_events, key=lambda t: t.timestamp)
    return [ToolStep(t.name, succeeded(t.status)) for t in ordered]


def pattern_id(scope: ScopeFields, names: Sequence[str]) -> str:
    """`pat_` + H32 of the full tenant (agent, user, mode, hai; not the thread: a pattern
    spans threads) and the full ordered sequence. Distinct tenants or sequences never share
    an id (fixes §16.19's 8-character wallet slice)."""
    key = [scope.agent_wallet, scope.user_address, scope.mode, scope.hai_id, list(names)]
    return "pat_" + h32(json.dumps(key, separators=(",", ":")))


@dataclass(frozen=True, slots=True)
class PatternSeed:
    """What identifies a pattern and never changes: its tenant and its steps."""

    pattern_id: str
    scope: ScopeFields
    steps: tuple[str, ...]

    @classmethod
    def of(cls, scope: ScopeFields, names: Sequence[str]) -> PatternSeed:
        """The seed of a sequence in a tenant; the thread is dropped (patterns are durable)."""
        if not names:
            raise InputRejected("a pattern needs at least one step")
        durable = replace(scope, thread_id=None)
        return cls(pattern_id(durable, names), durable, tuple(names))

    @property
    def trigger(self) -> str:
        """The first tool: what starts the procedure."""
        return self.steps[0]


@dataclass(frozen=True, slots=True)
class Execution:
    """One turn's run of a pattern. `at` is the last tool call's timestamp (ms)."""

    seed: PatternSeed
    turn_id: str
    succeeded: bool
    at: int


def observe(event: TurnRecorded) -> Execution | None:
    """The pattern execution a turn contains, or None when it called no tool. The turn
    succeeded when every one of its tool calls did."""
    steps = tool_sequence(event)
    if not steps:
        return None
    seed = PatternSeed.of(scope_fields(event.scope), [s.name for s in steps])
    return Execution(
        seed=seed,
        turn_id=event.turn_id,
        succeeded=all(s.succeeded for s in steps),
        at=max(t.timestamp for t in event.tool_events),
    )


def percent(successes: int, executions: int) -> int:
    """Success in whole percent, half rounded up (the Mongo adapter computes the same)."""
    return math.floor(successes * 100 / executions + 0.5) if executions else 0


def describe(steps: Sequence[str], executions: int, successes: int) -> str:
    """The searchable summary: the sequence, how often it ran and worked, and its trigger."""
    times = "time" if executions == 1 else "times"
    return (
        f"Tool sequence: {' -> '.join(steps)} "
        f"(used {executions} {times}, {percent(successes, executions)}% successful). "
        f"Starts with {steps[0]}."
    )


@dataclass(frozen=True, slots=True)
class PatternState:
    """A pattern with its counts. Times are ms since epoch, from the turns' tool events."""

    pattern_id: str
    scope: ScopeFields
    steps: tuple[str, ...]
    executions: int
    successes: int
    last_executed: int
    created_at: int
    status: str = ACTIVE

    @property
    def success_rate(self) -> float:
        """successes / executions, in [0, 1]; 0 before the first execution."""
        return self.successes / self.executions if self.executions else 0.0

    @property
    def summary(self) -> str:
        return describe(self.steps, self.executions, self.successes)


def to_record(state: PatternState) -> PatternRecord:
    """The record the patterns layer reads (`PatternStore.active`)."""
    return PatternRecord(
        pattern_id=state.pattern_id,
        scope=state.scope,
        pattern_type=PATTERN_TYPE,
        trigger_type=TRIGGER_TYPE,
        trigger_value=state.steps[0],
        steps=list(state.steps),
        summary=state.summary,
        success_rate=state.success_rate,
        execution_count=state.executions,
        last_executed=state.last_executed,
        created_at=state.created_at,
        tags=list(PATTERN_TAGS),
        status=state.status,
    )


class PatternCounter(Protocol):
    """Execution counts of patterns, keyed by `pattern_id`."""

    async def record_execution(
        self, pattern: PatternSeed, *, turn_id: str, succeeded: bool, at: int
    ) -> bool:
        """Count one execution (and a success if `succeeded`) atomically; creates the
        pattern on its first execution. Idempotent on `turn_id` (among the last
        `TURN_IDS_KEPT` turns of the pattern): False when the turn was already counted."""
        ...

    async def get(self, where: TenantFilter, pattern_id: str) -> PatternState | None:
        """The pattern, when the filter admits its tenant; None otherwise."""
        ...

    async def list(self, where: TenantFilter, limit: int) -> builtins.list[PatternState]:
        """Patterns the filter admits: success rate↓, executions↓, last executed↓."""
        ...

    async def set_embedding(self, pattern_id: str, embedding: Vector, model: str) -> bool:
        """Store the embedding of the counted pattern's steps (what the patterns layer ranks
        by) unless it has one; True if stored now, False if it had one or is not counted."""
        ...


async def record_turn(counter: PatternCounter, event: TurnRecorded) -> bool:
    """Count the turn's tool sequence; False when it has none or was already counted."""
    execution = observe(event)
    if execution is None:
        return False
    return await counter.record_execution(
        execution.seed, turn_id=execution.turn_id, succeeded=execution.succeeded, at=execution.at
    )


@dataclass(frozen=True, slots=True)
class Validation:
    valid: bool
    confidence: float
    occurrences: int
    success_rate: float
    tool_sequence: tuple[str, ...]


def validate_counts(executions: int, success_rate: float) -> tuple[bool, float]:
    """(valid, confidence) of reference §9.2: confidence = min(1, executions/10 × rate);
    valid = executions ≥ 2 and rate ≥ 0.55 and confidence ≥ 0.2."""
    confidence = min(1.0, executions / FULL_CONFIDENCE_EXECUTIONS * success_rate)
    valid = (
        executions >= MIN_EXECUTIONS
        and success_rate >= MIN_SUCCESS_RATE
        and confidence >= MIN_CONFIDENCE
    )
    return valid, confidence


def validate(state: PatternState | None) -> Validation:
    """The §9.2 validation of a stored pattern; an unknown pattern is all zero / invalid."""
    if state is None:
        return Validation(False, 0.0, 0, 0.0, ())
    valid, confidence = validate_counts(state.executions, state.success_rate)
    return Validation(valid, confidence, state.executions, state.success_rate, state.steps)


@dataclass(frozen=True, slots=True)
class Skill:
    """A validated pattern promoted to a reusable procedure (reference §9.3). Times in ms."""

    skill_id: str
    pattern_id: str
    scope: ScopeFields
    name: str
    description: str
    tools: tuple[str, ...]
    success_rate: float
    confidence: float
    created_at: int
    category: str = "learned"
    usage_count: int = 0
    creator: str = "system"
    tags: tuple[str, ...] = SKILL_TAGS

    @property
    def max_steps(self) -> int:
        return max(3, len(self.tools))


def skill_id(pattern_id: str) -> str:
    """Deterministic: one pattern gives at most one skill."""
    return "skill_" + h32(pattern_id)


class SkillStore(Protocol):
    """Promoted skills, keyed by `skill_id`."""

    async def promote(self, skill: Skill) -> bool:
        """Store the skill unless one with its id exists; True if stored now."""
        ...

    async def get(self, where: TenantFilter, skill_id: str) -> Skill | None: ...

    async def list(self, where: TenantFilter, limit: int) -> builtins.list[Skill]:
        """Skills the filter admits: success rate↓, usage↓, created↓."""
        ...


@dataclass(frozen=True, slots=True)
class PromotionResult:
    status: Literal["promoted", "already_promoted", "invalid"]
    validation: Validation
    skill: Skill | None = None

    @property
    def promoted(self) -> bool:
        return self.status == "promoted"


async def promote(
    patterns: PatternCounter,
    skills: SkillStore,
    where: TenantFilter,
    pattern_id: str,
    name: str,
    *,
    at: int,
) -> PromotionResult:
    """Promote a pattern of the tenant to a skill, validating it from the stored counts
    (never from what the caller claims, §16.19). Raises `NotFound` for a pattern the filter
    does not admit and `InputRejected` for a blank name; an invalid pattern is refused
    (`status="invalid"`); a second promotion returns the existing skill unchanged."""
    clean = name.strip()
    if not clean:
        raise InputRejected("skill name must not be blank")
    state = await patterns.get(where, pattern_id)
    if state is None:
        raise NotFound(f"no pattern {pattern_id} in this scope")
    check = validate(state)
    if not check.valid:
        return PromotionResult("invalid", check)
    skill = Skill(
        skill_id=skill_id(state.pattern_id),
        pattern_id=state.pattern_id,
        scope=state.scope,
        name=clean,
        description=f"learned from pattern {state.pattern_id}: {state.summary}",
        tools=state.steps,
        success_rate=state.success_rate,
        confidence=check.confidence,
        created_at=at,
    )
    if await skills.promote(skill):
        return PromotionResult("promoted", check, skill)
    existing = await skills.get(where, skill.skill_id)
    return PromotionResult("already_promoted", check, existing or skill)


_STATUS = re.compile(r"\bstatus:(\S+)")


def executions_from_transcript(transcript: Transcript) -> list[Execution]:
    """The pattern executions a stored transcript holds, one per turn with tool messages
    (for `patterns_extract`, the full recount used to repair counts). A tool message is
    `tool:<name> status:<status> …` with `toolCalls[0].name` (see `engine.ingest.turns`)."""
    turns: dict[str, list[StoredMessage]] = {}
    for m in transcript.messages:
        if m.role == "tool" and m.turn_id:
            turns.setdefault(m.turn_id, []).append(m)
    out: list[Execution] = []
    for turn_id, messages in turns.items():
        messages.sort(key=lambda m: m.timestamp)
        names: list[str] = []
        ok = True
        for m in messages:
            calls = m.tool_calls or []
            name = calls[0].get("name") if calls else None
            if not isinstance(name, str) or not name:
                continue
            names.append(name)
            found = _STATUS.search(m.content)
            ok = ok and succeeded(found.group(1) if found else "completed")
        if names:
            seed = PatternSeed.of(transcript.scope, names)
            out.append(Execution(seed, turn_id, ok, max(m.timestamp for m in messages)))
    return out


def steps_text(steps: Sequence[str]) -> str:
    """A pattern's steps in words, for its embedding: "search flights, then compare fares,
    then book ticket" (tool names split on underscores, dots and dashes)."""
    words = [re.sub(r"[_.\-]+", " ", s).strip() for s in steps]
    return "Procedure: " + ", then ".join(words)
