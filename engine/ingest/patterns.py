"""Procedural patterns learned from tool outcomes (their promotion to skills:
`engine.ingest.skills`).

A turn's tool calls, ordered by time, form a *sequence*; every turn with the same sequence
in the same tenant (agent, user, mode, hai) counts one *execution* of one pattern: a
*success* when every call in it succeeded, a failure when one failed, and *unknown* when no
call failed but one's outcome was not reported (`engine.ingest.outcomes`). The success rate
is successes over the executions whose outcome is known, so an unknown outcome counts a run
but moves no success rate, and validation weighs only known outcomes (issue 17: a tool event
without a status used to count as a success). Counting is idempotent per turn id, so a
redelivered or replayed `TurnRecorded` never counts twice.

Fixes of the reference (reference §9, §16.4, §16.19):
* success comes from the tools' outcomes, not from frequency;
* the counter never puts a field in both `$set` and `$setOnInsert` (the reference's write
  always failed on that path conflict);
* `pattern_id` hashes the whole tenant and the whole sequence (the reference used 8 chars
  of the wallet, so agents sharing them overwrote each other's patterns).
"""

from __future__ import annotations

import builtins
import hashlib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from engine.errors import InputRejected
from engine.ingest.outcomes import Outcome, combined_outcome, outcome, recorded_call
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
    succeeded: Outcome
    """None when the call's outcome is unknown."""


def tool_sequence(event: TurnRecorded) -> list[ToolStep]:
    """The turn's tool calls ordered by timestamp (ties keep their order in the event);
    empty when the turn called no tool (then there is no pattern)."""
    ordered = sorted(event.tool_events, key=lambda t: t.timestamp)
    return [ToolStep(t.name, outcome(t.status)) for t in ordered]


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
    """One turn's run of a pattern. `at` is the last tool call's timestamp (ms);
    `succeeded` is None when the run's outcome is unknown."""

    seed: PatternSeed
    turn_id: str
    succeeded: Outcome
    at: int


def observe(event: TurnRecorded) -> Execution | None:
    """The pattern execution a turn contains, or None when it called no tool. The turn
    failed when one of its tool calls failed, succeeded when every one did, and is unknown
    otherwise (`engine.ingest.outcomes.combined_outcome`)."""
    steps = tool_sequence(event)
    if not steps:
        return None
    seed = PatternSeed.of(scope_fields(event.scope), [s.name for s in steps])
    return Execution(
        seed=seed,
        turn_id=event.turn_id,
        succeeded=combined_outcome(s.succeeded for s in steps),
        at=max(t.timestamp for t in event.tool_events),
    )


def percent(successes: int, known: int) -> int:
    """Success in whole percent of the runs with a known outcome, half rounded up (the Mongo
    adapter computes the same)."""
    return math.floor(successes * 100 / known + 0.5) if known else 0


def describe(steps: Sequence[str], executions: int, successes: int, unknown: int = 0) -> str:
    """The searchable summary: the sequence, how often it ran and worked (of the runs with
    a known outcome; `unknown` runs did not report theirs), and its trigger."""
    times = "time" if executions == 1 else "times"
    known = executions - unknown
    parts = [f"used {executions} {times}"]
    if known:
        parts.append(f"{percent(successes, known)}% successful")
    if unknown:
        outcomes = "outcome" if unknown == 1 else "outcomes"
        parts.append(f"{outcomes} unknown" if not known else f"{unknown} {outcomes} unknown")
    return f"Tool sequence: {' -> '.join(steps)} ({', '.join(parts)}). Starts with {steps[0]}."


@dataclass(frozen=True, slots=True)
class PatternState:
    """A pattern with its counts: `executions` runs, of which `successes` succeeded and
    `unknown` did not report their outcome. Times are ms since epoch, from the turns' tool
    events."""

    pattern_id: str
    scope: ScopeFields
    steps: tuple[str, ...]
    executions: int
    successes: int
    last_executed: int
    created_at: int
    status: str = ACTIVE
    unknown: int = 0

    @property
    def known(self) -> int:
        """The runs whose outcome is known (succeeded or failed)."""
        return self.executions - self.unknown

    @property
    def success_rate(self) -> float:
        """successes / known runs, in [0, 1]; 0 while no run's outcome is known."""
        return self.successes / self.known if self.known else 0.0

    @property
    def summary(self) -> str:
        return describe(self.steps, self.executions, self.successes, self.unknown)


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
        unknown_count=state.unknown,
        last_executed=state.last_executed,
        created_at=state.created_at,
        tags=list(PATTERN_TAGS),
        status=state.status,
    )


class PatternCounter(Protocol):
    """Execution counts of patterns, keyed by `pattern_id`."""

    async def record_execution(
        self, pattern: PatternSeed, *, turn_id: str, succeeded: Outcome, at: int
    ) -> bool:
        """Count one execution atomically: a success if `succeeded` is True, an unknown
        outcome if it is None; creates the pattern on its first execution. Idempotent on
        `turn_id` (among the last `TURN_IDS_KEPT` turns of the pattern): False when the turn
        was already counted."""
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


def validate_counts(known: int, success_rate: float) -> tuple[bool, float]:
    """(valid, confidence) of reference §9.2 over the `known` runs (those with a known
    outcome; a run without one is no evidence): confidence = min(1, known/10 × rate);
    valid = known ≥ 2 and rate ≥ 0.55 and confidence ≥ 0.2."""
    confidence = min(1.0, known / FULL_CONFIDENCE_EXECUTIONS * success_rate)
    valid = (
        known >= MIN_EXECUTIONS
        and success_rate >= MIN_SUCCESS_RATE
        and confidence >= MIN_CONFIDENCE
    )
    return valid, confidence


def validate(state: PatternState | None) -> Validation:
    """The §9.2 validation of a stored pattern (`occurrences` counts every run, the rest
    only the runs with a known outcome); an unknown pattern is all zero / invalid."""
    if state is None:
        return Validation(False, 0.0, 0, 0.0, ())
    valid, confidence = validate_counts(state.known, state.success_rate)
    return Validation(valid, confidence, state.executions, state.success_rate, state.steps)


def executions_from_transcript(transcript: Transcript) -> list[Execution]:
    """The pattern executions a stored transcript holds, one per turn with tool messages
    (for `patterns_extract`, the full recount used to repair counts). A tool message is
    `tool:<name> status:<status> …` with `toolCalls[0].name` (see `engine.ingest.outcomes`);
    one stored without a status (a legacy or imported transcript) is an unknown outcome,
    never a success."""
    turns: dict[str, list[StoredMessage]] = {}
    for m in transcript.messages:
        if m.role == "tool" and m.turn_id:
            turns.setdefault(m.turn_id, []).append(m)
    out: list[Execution] = []
    for turn_id, messages in turns.items():
        messages.sort(key=lambda m: m.timestamp)
        names: list[str] = []
        outcomes: list[Outcome] = []
        for m in messages:
            call = recorded_call(m)
            if call is not None:
                names.append(call[0])
                outcomes.append(outcome(call[1]))
        if names:
            seed = PatternSeed.of(transcript.scope, names)
            at = max(m.timestamp for m in messages)
            out.append(Execution(seed, turn_id, combined_outcome(outcomes), at))
    return out


def steps_text(steps: Sequence[str]) -> str:
    """A pattern's steps in words, for its embedding: "search flights, then compare fares,
    then book ticket" (tool names split on underscores, dots and dashes)."""
    words = [re.sub(r"[_.\-]+", " ", s).strip() for s in steps]
    return "Procedure: " + ", then ".join(words)
