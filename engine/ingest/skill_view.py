"""The document form of a skill (reference §9.3's shape): what the skill store keeps (with
`_id` added) and what the admin API shows, so the two cannot drift apart."""

from __future__ import annotations

from typing import Any

from engine.ingest.skills import Skill


def skill_view(s: Skill) -> dict[str, Any]:
    """The skill as a camelCase document, without `_id`."""
    return {
        "skillId": s.skill_id,
        "patternId": s.pattern_id,
        **s.scope.view(),
        "name": s.name,
        "description": s.description,
        "category": s.category,
        "trigger": {"type": "pattern", "patterns": [s.pattern_id, *s.tools]},
        "spawnConfig": {
            "skillType": "learned",
            "tools": list(s.tools),
            "maxSteps": s.max_steps,
            "conditions": {"minConfidence": s.confidence},
        },
        "successRate": s.success_rate,
        "usageCount": s.usage_count,
        "creator": s.creator,
        "promotion": s.promotion,
        "agents": [s.scope.agent_wallet],
        "tags": list(s.tags),
        "createdAt": s.created_at,
    }
