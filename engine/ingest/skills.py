"""Skills: validated patterns promoted to reusable procedures (reference §9.3).

Fixes of the reference (§16.19): promotion re-validates from the stored counts (never from
data the caller sends) and is idempotent, one pattern giving at most one skill. A skill says
how it was promoted: `promotion` is `manual` (a caller asked, `patterns.promote`) or
`automatic` (the system decided), and its tags and `creator` follow from it. The reference
tagged every skill `auto-promoted` although only a caller's request ever promoted one, and
so did this code until issue 17.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Literal, Protocol

from engine.errors import InputRejected, NotFound
from engine.ingest.patterns import PatternCounter, Validation, h32, validate
from engine.records import ScopeFields
from engine.scoping import TenantFilter

Promotion = Literal["manual", "automatic"]
PROMOTIONS: tuple[Promotion, ...] = ("manual", "automatic")
CREATORS: dict[Promotion, str] = {"manual": "caller", "automatic": "system"}
"""Who promoted: a caller's request, or the system on its own."""


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
    promotion: Promotion = "manual"

    @property
    def max_steps(self) -> int:
        return max(3, len(self.tools))

    @property
    def creator(self) -> str:
        """`caller` for a manual promotion, `system` for an automatic one."""
        return CREATORS[self.promotion]

    @property
    def tags(self) -> tuple[str, ...]:
        """What happened: `pattern`, `promoted` and how (`manual` or `automatic`)."""
        return ("pattern", "promoted", self.promotion)


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
    how: Promotion = "manual",
) -> PromotionResult:
    """Promote a pattern of the tenant to a skill, validating it from the stored counts
    (never from what the caller claims, §16.19); `how` records who asked (`manual`: a
    caller's request). Raises `NotFound` for a pattern the filter does not admit and
    `InputRejected` for a blank name; an invalid pattern is refused (`status="invalid"`); a
    second promotion returns the existing skill unchanged."""
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
        promotion=how,
    )
    if await skills.promote(skill):
        return PromotionResult("promoted", check, skill)
    existing = await skills.get(where, skill.skill_id)
    return PromotionResult("already_promoted", check, existing or skill)
